# bolt_rounds.awk: awk functions shared by the scripts that measure in rounds
# run in turn (util/bolt_bench_compare.sh, util/bolt_collective_compare.sh,
# test/hosts/check_hosts.sh), put in front of their own program text. On a
# shared machine single runs differ by 10 to 30 %, and speeds drift over
# minutes: each verdict is on the median over the rounds of a comparison made
# within one round. The caller sets rounds (-v rounds=N) and fills
# by_round[key, round] with each round's figures.

# The median of a list of numbers (the mean of the middle two for an even
# count; "" for none); its lowest and highest are kept in low[key] and high[key].
function median_of(list, key,    count, sorted, i, j, value) {
	count = split(list, sorted, " ")
	if (!count) return ""
	for (i = 2; i <= count; i++) {
		value = sorted[i] + 0
		for (j = i - 1; j >= 1 && sorted[j] + 0 > value; j--)
			sorted[j + 1] = sorted[j]
		sorted[j + 1] = value
	}
	low[key] = sorted[1]; high[key] = sorted[count]
	return count % 2 ? sorted[(count + 1) / 2] : (sorted[count / 2] + sorted[count / 2 + 1]) / 2
}

# " [lowest-highest]" of a median_of's key when there were several rounds.
function range(key) {
	return rounds > 1 ? sprintf(" [%s-%s]", low[key], high[key]) : ""
}

# Per round, the figure of key against the one of other in the same round,
# for the rounds that have both: their ratio (as_ratio), or their difference.
function paired(key, other, as_ratio,    round, list) {
	list = ""
	for (round = 1; round <= rounds; round++) {
		if (!((key, round) in by_round) || !((other, round) in by_round))
			continue
		if (!as_ratio)
			list = list " " by_round[key, round] - by_round[other, round]
		else if (by_round[other, round] > 0)
			list = list " " by_round[key, round] / by_round[other, round]
	}
	return list
}
