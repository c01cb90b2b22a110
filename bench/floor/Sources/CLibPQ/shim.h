// libpq, the C client that pgbench uses (Debian: libpq-dev), for the floor's --driver comparison.
#include <postgresql/libpq-fe.h>
