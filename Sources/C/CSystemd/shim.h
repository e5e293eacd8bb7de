// sd-bus, libsystemd's D-Bus client, for the DBus module. Only the header: every call goes through Swift.
#ifndef CSYSTEMD_SHIM_H
#define CSYSTEMD_SHIM_H

#include <systemd/sd-bus.h>

#endif
