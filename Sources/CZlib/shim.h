// The system zlib (Debian: zlib1g-dev), for gzip request bodies and spool checksums.
#include <zlib.h>
