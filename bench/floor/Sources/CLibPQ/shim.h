// libpq, the C client that pgbench uses (Debian: libpq-dev), for the floor's /floor/delta-libpq route.
#include <postgresql/libpq-fe.h>
