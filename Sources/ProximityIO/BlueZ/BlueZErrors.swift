import Glibc
import Proximity

/// Turns socket failures into the errors users see, each saying what to do next.
enum ProximityErrorMapping {
    static let simulatedHint = "use --ble sim to use the simulated radio"

    static func error(_ error: HCISocketError, adapter: Int) -> ProximityError {
        let name = "hci\(adapter)"
        switch error.code {
        case EAFNOSUPPORT:
            return .unavailable("this kernel has no Bluetooth support (AF_BLUETOOTH); \(simulatedHint)")
        case ENODEV:
            return .unavailable(
                "no Bluetooth adapter \(name) (`hciconfig` or `btmgmt info` lists the adapters); \(simulatedHint)")
        case EPERM, EACCES:
            return .unavailable(
                "Bluetooth adapter \(name) through a raw HCI socket needs CAP_NET_RAW and CAP_NET_ADMIN: run as root or "
                    + "`sudo setcap cap_net_raw,cap_net_admin+ep \(executablePath())`; or --ble hci:\(adapter) through "
                    + "bluetoothd, which needs neither; or \(simulatedHint)")
        case ERFKILL:
            return .unavailable(
                "Bluetooth adapter \(name) is blocked by rfkill: `rfkill unblock bluetooth`; or \(simulatedHint)")
        case EBUSY:
            return .unavailable(
                "Bluetooth adapter \(name) is held exclusively by another program (HCI user channel); or \(simulatedHint)"
            )
        case ENETDOWN:
            return .unavailable("Bluetooth adapter \(name) is down: `sudo hciconfig \(name) up`; or \(simulatedHint)")
        default:
            return .failed("\(error.call) on \(name) failed: \(String(cString: strerror(error.code)).lowercased())")
        }
    }

    /// This program's path, for the `setcap` suggestion.
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "<binary>" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
