import Basics

/// What the virtual FIDO security key tells the kernel about itself, and how its reports travel.
public enum FIDOHIDDevice {
    /// The HID report descriptor of a CTAPHID device (CTAP 2.1 §11.2.8.1): the FIDO Alliance usage page, one
    /// 64-byte input report and one 64-byte output report, without report IDs.
    public static let reportDescriptor: [UInt8] = [
        0x06, 0xD0, 0xF1,  // Usage Page (FIDO Alliance, 0xF1D0)
        0x09, 0x01,  // Usage (CTAPHID, 0x01)
        0xA1, 0x01,  // Collection (Application)
        0x09, 0x20,  //   Usage (Input Report Data, 0x20)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8 bits)
        0x95, 0x40,  //   Report Count (64)
        0x81, 0x02,  //   Input (Data, Variable, Absolute)
        0x09, 0x21,  //   Usage (Output Report Data, 0x21)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8 bits)
        0x95, 0x40,  //   Report Count (64)
        0x91, 0x02,  //   Output (Data, Variable, Absolute)
        0xC0,  // End Collection
    ]

    /// `BUS_USB` of `<linux/input.h>`: browsers and libfido2 treat the device like a USB key.
    public static let busUSB: UInt16 = 0x03
    /// The pid.codes vendor ID 0x1209.
    public static let vendorID: UInt32 = 0x1209
    /// 0x0001, the pid.codes "Test PID": for testing only, and not unique to this project.
    public static let productID: UInt32 = 0x0001
    /// The device name the kernel reports (`HID_NAME`, and the product string browsers show).
    public static let name = "passkey (software authenticator)"

    /// The `UHID_CREATE2` payload for the device; `phys` tells several instances apart in sysfs.
    public static func create(phys: String, version: UInt32 = 0x0100) throws(UHIDCodecError) -> UHIDCreate2 {
        try UHIDCreate2(
            name: name, phys: phys, uniq: "", bus: busUSB, vendor: vendorID, product: productID, version: version,
            country: 0, descriptor: reportDescriptor)
    }

    /// The 64-byte CTAPHID report in the data of a `UHID_OUTPUT` event, or `nil` if there is none.
    ///
    /// A host writes a report to /dev/hidrawN as the report number followed by the report; as the descriptor has
    /// no report IDs the number is 0, and uhid passes all 65 bytes on (unlike usbhid, it does not strip the
    /// number). So 65 bytes starting with 0 are a report after its number; 64 bytes are taken as the report
    /// itself (a writer that left the number out). Anything else is not a CTAPHID report.
    public static func report(fromOutput data: [UInt8]) -> [UInt8]? {
        switch data.count {
        case 64: data
        case 65 where data[0] == 0: Array(data.dropFirst())
        default: nil
        }
    }

    /// The `HID_ID` line of the device's uevent, as the kernel formats it (`%04X:%08X:%08X`).
    public static var hidID: String {
        "\(busUSB.hexDigits(4, uppercase: true)):\(vendorID.hexDigits(8, uppercase: true)):"
            + productID.hexDigits(8, uppercase: true)
    }
}
