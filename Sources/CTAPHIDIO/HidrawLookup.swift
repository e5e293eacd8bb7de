import Foundation
import UHID

/// A hidraw node whose HID device declares the FIDO usage page: a security key.
public struct FIDOHidrawDevice: Hashable, Sendable, CustomStringConvertible {
    /// The node to open, such as `/dev/hidraw3`.
    public var path: String
    /// The device's name (`HID_NAME`), if the kernel gave one; control characters are replaced by `?`.
    public var name: String?

    public init(path: String, name: String?) {
        self.path = path
        self.name = name
    }

    /// `/dev/hidraw3 (Yubico YubiKey OTP+FIDO+CCID)`, or the path alone.
    public var description: String { name.map { "\(path) (\($0))" } ?? path }
}

/// Finds hidraw nodes from sysfs: the /dev/hidrawN node the kernel made for a HID device (from its `uevent` file),
/// and every node whose device is a FIDO security key (from its `report_descriptor`).
///
/// Each `/sys/class/hidraw/hidrawN/device/uevent` describes the HID device behind the node, with lines such as
/// `HID_ID=0003:00001209:00000001`, `HID_NAME=…` and `HID_PHYS=…`; `…/device/report_descriptor` holds its HID
/// report descriptor, readable by everyone.
public enum HidrawLookup {
    /// Every hidraw node whose report descriptor has a top-level collection with the FIDO usage page 0xF1D0 and
    /// usage 0x01 (CTAP 2.1 §11.2.8.1), as libfido2 and python-fido2 find keys, in node order.
    public static func fidoDevices(sysfsClass: String = "/sys/class/hidraw", devices: String = "/dev")
        -> [FIDOHidrawDevice]
    {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: sysfsClass) else { return [] }
        return nodeNames(names).compactMap { name in
            guard isFIDO(name: name, sysfsClass: sysfsClass) == true else { return nil }
            let uevent = try? String(contentsOfFile: "\(sysfsClass)/\(name)/device/uevent", encoding: .utf8)
            let deviceName = uevent.flatMap { ueventValues($0)["HID_NAME"] }.map(printable)
            return FIDOHidrawDevice(path: "\(devices)/\(name)", name: deviceName)
        }
    }

    /// Whether the node at `path` (such as `/dev/hidraw3`) is a FIDO device, from its report descriptor; `nil` when
    /// sysfs does not describe it (not a hidraw node, or no sysfs).
    public static func isFIDO(path: String, sysfsClass: String = "/sys/class/hidraw") -> Bool? {
        let name = (path as NSString).lastPathComponent
        guard name.hasPrefix("hidraw") else { return nil }
        return isFIDO(name: name, sysfsClass: sysfsClass)
    }

    private static func isFIDO(name: String, sysfsClass: String) -> Bool? {
        let url = URL(fileURLWithPath: "\(sysfsClass)/\(name)/device/report_descriptor")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return (try? HIDReportDescriptor(bytes: Array(data)))?.isFIDO ?? false
    }

    /// A name the device chose, with control characters (which could rewrite a terminal line) replaced by `?`.
    private static func printable(_ text: String) -> String {
        let scalars = text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }
        return String(String.UnicodeScalarView(scalars))
    }

    /// `hidrawN` names in numeric order (hidraw2 before hidraw10).
    private static func nodeNames(_ names: [String]) -> [String] {
        names.filter { $0.hasPrefix("hidraw") }.sorted {
            let (left, right) = (Int($0.dropFirst(6)), Int($1.dropFirst(6)))
            if let left, let right, left != right { return left < right }
            return $0 < $1
        }
    }

    /// The node (`/dev/hidrawN`) whose HID device has all the given uevent values, if any.
    ///
    /// - Parameters:
    ///   - properties: The values to match, such as `["HID_ID": …, "HID_NAME": …, "HID_PHYS": …]`.
    ///   - sysfsClass: The directory listing the hidraw nodes.
    ///   - devices: The directory the nodes appear in.
    public static func node(
        matching properties: [String: String],
        sysfsClass: String = "/sys/class/hidraw",
        devices: String = "/dev"
    ) -> String? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: sysfsClass) else { return nil }
        for name in nodeNames(names) {
            let path = "\(sysfsClass)/\(name)/device/uevent"
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let values = ueventValues(text)
            if properties.allSatisfy({ values[$0.key] == $0.value }) { return "\(devices)/\(name)" }
        }
        return nil
    }

    /// Polls ``node(matching:sysfsClass:devices:)`` until the node appears or `timeout` passes.
    public static func waitForNode(
        matching properties: [String: String],
        timeout: Duration,
        sysfsClass: String = "/sys/class/hidraw",
        devices: String = "/dev"
    ) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let node = node(matching: properties, sysfsClass: sysfsClass, devices: devices) { return node }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `KEY=VALUE` lines as a dictionary.
    static func ueventValues(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }
}
