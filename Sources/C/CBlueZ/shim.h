#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
