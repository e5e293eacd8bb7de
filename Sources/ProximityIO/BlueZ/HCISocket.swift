import Basics
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
/// `LinuxHCISocket`; tests use a scripted fake. Callers never use one socket from two threads at once, except
/// `interrupt()`, which any thread may call at any time.
protocol HCISocket: Sendable {
    /// Writes one whole H4 packet (indicator byte first).
    func write(_ packet: [UInt8]) throws(HCISocketError)
    /// Waits for the next packet and returns it. Returns `nil` when none arrives within `timeout` (`nil`: no
    /// limit), or when `interrupt()` is called.
    func read(timeout: Duration?) throws(HCISocketError) -> [UInt8]?
    /// Makes a `read` waiting on another thread return `nil` now. Without one waiting, the next `read` returns `nil`
    /// at once instead.
    func interrupt()
    /// Closes the socket; later calls fail.
    func close()
}

/// A raw HCI socket (`AF_BLUETOOTH`, `BTPROTO_HCI`, `HCI_CHANNEL_RAW`) bound to one adapter and filtered with
/// `HCIEventFilter.backend`, and an eventfd that wakes a read. Only I/O: the bytes are `HCICommand`'s and
/// `HCIEvent`'s business. A read sleeps in poll(2) on both descriptors, so an idle scanner costs nothing.
final class LinuxHCISocket: HCISocket {
    private struct Descriptors {
        /// The socket; -1 once closed.
        var socket: Int32
        /// The eventfd `interrupt()` signals; -1 once closed.
        var wakeUp: Int32
    }

    private let descriptors: Mutex<Descriptors>

    /// Takes `socket`, a connected packet socket, and makes the eventfd. On failure `socket` stays open.
    init(socket: Int32) throws(HCISocketError) {
        let wakeUp = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeUp >= 0 else { throw HCISocketError(call: "eventfd", code: errno) }
        descriptors = Mutex(Descriptors(socket: socket, wakeUp: wakeUp))
    }

    /// `_IOW('H', 201, int)` from `<bluetooth/hci.h>`, which Swift does not import.
    static let deviceUpRequest: UInt = {
        let direction: UInt = 1 << 30
        let size = UInt(MemoryLayout<Int32>.size) << 16
        let type = UInt(UInt8(ascii: "H")) << 8
        return direction | size | type | 201
    }()

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
            let wanted = HCIEventFilter.backend
            var filter = hci_filter()
            filter.type_mask = wanted.typeMask
            filter.event_mask = (wanted.eventMask[0], wanted.eventMask[1])
            let set = setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size))
            guard set == 0 else { throw HCISocketError(call: "setsockopt(HCI_FILTER)", code: errno) }
            return try LinuxHCISocket(socket: fd)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    func write(_ packet: [UInt8]) throws(HCISocketError) {
        let fd = descriptors.withLock { $0.socket }
        guard fd >= 0 else { throw HCISocketError(call: "write", code: EBADF) }
        while true {
            let written = packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written == packet.count { return }
            if written < 0, errno == EINTR { continue }
            throw HCISocketError(call: "write", code: written < 0 ? errno : EIO)
        }
    }

    func read(timeout: Duration?) throws(HCISocketError) -> [UInt8]? {
        let (fd, wakeUp) = descriptors.withLock { ($0.socket, $0.wakeUp) }
        guard fd >= 0, wakeUp >= 0 else { throw HCISocketError(call: "read", code: EBADF) }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            var pollers = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeUp, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&pollers, 2, deadline.map { Self.milliseconds(until: $0) } ?? -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw HCISocketError(call: "poll", code: errno)
            }
            if ready == 0 { return nil }
            if pollers[1].revents != 0 {
                var count: UInt64 = 0
                _ = Glibc.read(wakeUp, &count, MemoryLayout<UInt64>.size)  // resets the counter
                return nil
            }
            // Readable, or an error or hang-up that the read reports.
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer[..<count]) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            throw HCISocketError(call: "read", code: count < 0 ? errno : EPIPE)
        }
    }

    func interrupt() {
        // Under the lock, so that `close()` cannot release the descriptor (and another open reuse its number) between
        // looking it up and writing to it. An eventfd write of 1 does not block.
        descriptors.withLock { descriptors in
            guard descriptors.wakeUp >= 0 else { return }
            var one: UInt64 = 1
            _ = Glibc.write(descriptors.wakeUp, &one, MemoryLayout<UInt64>.size)
        }
    }

    func close() {
        descriptors.withLock { descriptors in
            for fd in [descriptors.socket, descriptors.wakeUp] where fd >= 0 { Glibc.close(fd) }
            descriptors = Descriptors(socket: -1, wakeUp: -1)
        }
    }

    /// The poll(2) timeout to `deadline`: rounded up, so that a wait of under a millisecond does not spin.
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        Int32(clamping: max(0, ContinuousClock.now.duration(to: deadline).inMillisecondsRoundedUp))
    }
}
