import Foundation

/// Finds the /dev/hidrawN node the kernel made for a HID device, from the `uevent` files in sysfs.
///
/// Each `/sys/class/hidraw/hidrawN/device/uevent` describes the HID device behind the node, with lines such as
/// `HID_ID=0003:00001209:00000001`, `HID_NAME=…` and `HID_PHYS=…`.
public enum HidrawLookup {
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
        for name in names.sorted() where name.hasPrefix("hidraw") {
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
