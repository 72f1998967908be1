/*
 * bolt_loss.c: a loss that cannot be repaired fails the connection. UC drops
 * a packet without a trace at either end: lost messages are sent again
 * (bolt_retransmit.c), lost writes of application data written again
 * (bolt_rewrite.c). What is left for here is what neither can mend: a
 * message the protocol cannot take, a sequence gap on a reliable queue
 * pair. The connection fails, so every operation on it ends with an error
 * instead of waiting forever.
 */
#include "connection/bolt_connection.h"

void bolt_loss_fail(struct bolt_connection *connection, const char *why)
{
	connection->manager->events->lost(connection);
	if (connection->link)
		connection->link->retiring = true;
	bolt_connection_fail(connection, FI_EIO, why);
}
