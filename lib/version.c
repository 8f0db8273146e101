/* SPDX-License-Identifier: MIT */
/* The library's version at run time, for programs that check what they got. */
#include "req.h"

FSAIO__API const char *fsaio_version(void)
{
	return FSAIO_VERSION_STRING;
}

FSAIO__API int fsaio_version_check(int major, int minor)
{
	return major == FSAIO_VERSION_MAJOR && minor >= 0 && minor <= FSAIO_VERSION_MINOR;
}
