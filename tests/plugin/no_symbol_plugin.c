/* A shared object that is not a bootstrap plug-in (exports no hidet_nccl_bootstrap_v2 or _v1). */
int not_a_bootstrap(void) { return 42; }
