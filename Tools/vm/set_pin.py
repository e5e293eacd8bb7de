"""Sets a PIN on a FIDO2 device through the kernel's hidraw with python-fido2's ClientPin (run by Tools/vm/guest-tests).

Usage: TOKEN_PIN=… set_pin.py /dev/hidrawN

The PIN comes from the environment, never from the command line, and is never printed. fido2-token -S would do the
same but reads the PIN from a terminal, which the guest does not have.
"""

import os
import sys

from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin
from fido2.hid import CtapHidDevice


def main(path):
    pin = os.environ.get("TOKEN_PIN")
    if not pin:
        sys.exit("TOKEN_PIN is not set")
    matching = [d for d in CtapHidDevice.list_devices() if d.descriptor.path == path]
    if not matching:
        sys.exit(f"CtapHidDevice.list_devices() did not find {path}")
    ctap = Ctap2(matching[0])
    if ctap.info.options.get("clientPin"):
        sys.exit(f"{path} already has a PIN")
    ClientPin(ctap).set_pin(pin)
    if not Ctap2(matching[0]).get_info().options.get("clientPin"):
        sys.exit(f"{path} reports no PIN after setPIN")
    print(f"{path}: PIN set; getInfo clientPin true")


if __name__ == "__main__":
    main(sys.argv[1])
