/* memguard — see memguard.h. */
#include "base/memguard.h"

#include <sys/prctl.h>
#include <sys/resource.h>

int memguard_no_dumps(struct as_err *err)
{
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0)
        return as_err_errno(err, "cannot turn core files off (RLIMIT_CORE)");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return as_err_errno(err, "cannot make the process undumpable (PR_SET_DUMPABLE)");
    return 0;
}
