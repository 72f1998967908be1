/*
 * bolt_unsupported.h: the entries of libfabric ops tables that bolt does not
 * offer. libfabric calls through every slot of a table, so each must hold a
 * function; these return -FI_ENOSYS (or what libfabric documents instead).
 */
#ifndef BOLT_UNSUPPORTED_H
#define BOLT_UNSUPPORTED_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>

int bolt_no_bind(struct fid *fid, struct fid *bound_fid, uint64_t flags);
int bolt_no_control(struct fid *fid, int command, void *argument);
int bolt_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		     void *context);
int bolt_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		       void *context);
int bolt_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		      struct fid_wait **waitset);
int bolt_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
			void *context);
int bolt_no_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
			struct fid_stx **stx, void *context);
int bolt_no_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
			struct fid_ep **rx_ep, void *context);
int bolt_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
			 struct fi_atomic_attr *attr, uint64_t flags);
int bolt_no_av_insertsvc(struct fid_av *av, const char *node, const char *service,
			 fi_addr_t *fi_addr, uint64_t flags, void *context);
int bolt_no_av_insertsym(struct fid_av *av, const char *node, size_t node_count,
			 const char *service, size_t service_count, fi_addr_t *fi_addr,
			 uint64_t flags, void *context);
int bolt_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
		   void *context);

/* Endpoint ops an RDM endpoint without scalable contexts or connections lacks. */
int bolt_no_tx_context(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		       struct fid_ep **tx_ep, void *context);
int bolt_no_rx_context(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context);
ssize_t bolt_no_size_left(struct fid_ep *ep);
int bolt_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int bolt_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int bolt_no_listen(struct fid_pep *pep);
int bolt_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int bolt_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int bolt_no_shutdown(struct fid_ep *ep, uint64_t flags);
int bolt_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		 void *context);
int bolt_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);
int bolt_no_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		      uint64_t flags, void *context);

#endif /* BOLT_UNSUPPORTED_H */
