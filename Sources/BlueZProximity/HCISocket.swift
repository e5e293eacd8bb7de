import CBlueZ
import Glibc
import Proximity
import Synchronization

/// A system call on the HCI socket failed.
struct HCISocketError: Error, Hashable, Sendable {
    /// The call, as it appears in error messages: `socket`, `ioctl(HCIDEVUP)`, `bind`, `write`, …
    var call: String
    /// Its `errno`.
    var code: Int32
}

/// Packets to and from one controller: the seam between the HCI logic and the kernel. The real one is
/// `LinuxHCISocket`; tests use a scripted fake. Callers never use one socket from two threads at once.
protocol HCISocket: Sendable {
    /// Writes one whole H4 packet (indicator byte first).
    func write(_ packet: [UInt8]) throws(HCISocketError)
    /// The next packet, or `nil` when none arrives within `timeout`.
    func read(timeout: Duration) throws(HCISocketError) -> [UInt8]?
    /// Closes the socket; later calls fail.
    func close()
}

/// A raw HCI socket (`AF_BLUETOOTH`, `BTPROTO_HCI`, `HCI_CHANNEL_RAW`) bound to one adapter, filtered to the
/// Command Complete, Command Status and LE Meta events.
final class LinuxHCISocket: HCISocket {
    /// The file descriptor; -1 once closed.
    private let descriptor: Mutex<Int32>

    private init(descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    /// `_IOW('H', 201, int)` from `<bluetooth/hci.h>`, which Swift does not import.
    static let deviceUpRequest = UInt(1 << 30 | MemoryLayout<Int32>.size << 16 | Int(UInt8(ascii: "H")) << 8 | 201)

    /// Opens a raw socket on adapter `hciN`, bringing the adapter up if it is down and the process may.
    static func open(adapter: Int) throws(HCISocketError) -> any HCISocket {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw HCISocketError(call: "socket", code: errno) }
        do throws(HCISocketError) {
            // Already up is fine. Without CAP_NET_ADMIN the kernel refuses before looking at the adapter: go on, as an
            // adapter that is up needs only CAP_NET_RAW; a missing one fails `bind`, a down one the first write.
            if ioctl(fd, deviceUpRequest, CInt(adapter)) < 0, ![EALREADY, EPERM, EACCES].contains(errno) {
                throw HCISocketError(call: "ioctl(HCIDEVUP)", code: errno)
            }
            var address = sockaddr_hci()
            address.hci_family = sa_family_t(AF_BLUETOOTH)
            address.hci_dev = UInt16(truncatingIfNeeded: adapter)
            address.hci_channel = UInt16(HCI_CHANNEL_RAW)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
                }
            }
            guard bound == 0 else { throw HCISocketError(call: "bind", code: errno) }
            var filter = hci_filter()
            filter.type_mask = 1 << UInt32(HCIEvent.packetType)
            for code in [HCIEvent.commandCompleteCode, HCIEvent.commandStatusCode, HCIEvent.leMetaCode] {
                if code < 32 {
                    filter.event_mask.0 |= 1 << UInt32(code)
                } else {
                    filter.event_mask.1 |= 1 << UInt32(code - 32)
                }
            }
            let set = setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size))
            guard set == 0 else { throw HCISocketError(call: "setsockopt(HCI_FILTER)", code: errno) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return LinuxHCISocket(descriptor: fd)
    }

    func write(_ packet: [UInt8]) throws(HCISocketError) {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { throw HCISocketError(call: "write", code: EBADF) }
        while true {
            let written = packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written == packet.count { return }
            if written < 0, errno == EINTR { continue }
            throw HCISocketError(call: "write", code: written < 0 ? errno : EIO)
        }
    }

    func read(timeout: Duration) throws(HCISocketError) -> [UInt8]? {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { throw HCISocketError(call: "read", code: EBADF) }
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            // Rounded up, so that a wait of under a millisecond does not spin.
            let milliseconds = max(
                0,
                left.components.seconds * 1000 + (left.components.attoseconds + 999_999_999_999_999)
                    / 1_000_000_000_000_000)
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: milliseconds))
            if ready < 0 {
                if errno == EINTR { continue }
                throw HCISocketError(call: "poll", code: errno)
            }
            if ready == 0 { return nil }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer[..<count]) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            throw HCISocketError(call: "read", code: count < 0 ? errno : EPIPE)
        }
    }

    func close() {
        let fd = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { Glibc.close(fd) }
    }
}

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
                    + "`sudo setcap cap_net_raw,cap_net_admin+ep \(executablePath())`; or \(simulatedHint)")
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
            return .failed("\(error.call) on \(name): \(String(cString: strerror(error.code))) (errno \(error.code))")
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
