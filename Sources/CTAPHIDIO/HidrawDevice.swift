import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Why a hidraw node cannot be used as a security key.
public enum HidrawOpenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// There is no such node (ENOENT, ENODEV, ENXIO): the key is not plugged in, or the number changed.
    case notFound(path: String)
    /// The node exists but this user may not open it for reading and writing (EACCES, EPERM).
    case permissionDenied(path: String)
    /// sysfs says the node's HID device has no FIDO interface (usage page 0xF1D0, usage 0x01).
    case notFIDO(path: String)
    /// Opening the node failed for another reason (the errno value).
    case openFailed(path: String, errno: Int32)

    /// Classifies the errno of a failed `open` of `path`.
    public init(openErrno: Int32, path: String) {
        switch openErrno {
        case ENOENT, ENODEV, ENXIO: self = .notFound(path: path)
        case EACCES, EPERM: self = .permissionDenied(path: path)
        default: self = .openFailed(path: path, errno: openErrno)
        }
    }

    public var description: String {
        switch self {
        case .notFound(let path):
            "\(path) does not exist: is the security key plugged in? (`--security-key auto` finds it)"
        case .permissionDenied(let path):
            "no permission to open \(path) for reading and writing. On systemd systems udev gives the user at the "
                + "console access to FIDO keys (60-fido-id.rules sets ID_SECURITY_TOKEN, 70-uaccess.rules adds "
                + "uaccess; systemd 244 or later); a key made by `passkey serve --uhid` as root is root's, too. "
                + "Otherwise add a udev rule such as `KERNEL==\"hidraw*\", SUBSYSTEM==\"hidraw\", "
                + "ENV{ID_SECURITY_TOKEN}==\"1\", GROUP=\"plugdev\", MODE=\"0660\"` (or libfido2's 70-u2f.rules), "
                + "join that group and plug the key in again, or run with sudo; see Docs/SecurityKey.md"
        case .notFIDO(let path):
            "\(path) is not a FIDO security key: its HID report descriptor has no FIDO interface "
                + "(usage page 0xF1D0, usage 0x01)"
        case .openFailed(let path, let code):
            "cannot open \(path): \(String(cString: strerror(code)).lowercased())"
        }
    }
}

/// A hidraw node (/dev/hidrawN), or a stand-in in tests, served by one thread of its own.
///
/// The thread polls (poll(2)) the node and a wake-up pipe. Each read returns one input report: 64 bytes for a FIDO
/// key, whose descriptor has no report IDs; reads of any other size are dropped. Each output report is written as
/// 65 bytes, the report number 0 and the report, in one `write` (hidraw takes one report per call). Writes queue
/// and the pipe wakes the thread, which writes them in order, so no caller ever blocks on the device.
///
/// A dedicated thread rather than Dispatch's global queue, which starved under load on this project's machines, and
/// rather than `NIOPipeBootstrap`: NIO writes pending buffers with `writev`, which would join reports into one
/// oversized write, and it assumes a byte stream where hidraw keeps report boundaries.
final class HidrawDevice: Sendable {
    /// The size of every input and output report of a FIDO key.
    static let reportSize = 64

    /// What the thread tells its owner.
    struct Callbacks: Sendable {
        /// One input report (64 bytes).
        var report: @Sendable ([UInt8]) -> Void
        /// The thread ended: `nil` when closed, else why the device failed.
        var end: @Sendable (CTAPHIDConnectionError?) -> Void
    }

    /// Guarded by one lock, which is also held while the descriptors are written to for a wake-up or closed, so
    /// that nothing writes to a descriptor number after it was closed (and perhaps reused).
    private struct State {
        var queued: [[UInt8]] = []
        var closing = false
        var started = false
        /// The descriptors are closed by the thread when it ends, or by `close()` if it never started.
        var descriptorsClosed = false
    }

    let path: String
    private let descriptor: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let state = Mutex(State())

    /// Opens a hidraw node for reading and writing, after checking in sysfs (when sysfs knows the node) that it is
    /// a FIDO device.
    static func open(path: String, sysfsClass: String = "/sys/class/hidraw") throws(HidrawOpenError) -> HidrawDevice {
        if HidrawLookup.isFIDO(path: path, sysfsClass: sysfsClass) == false { throw .notFIDO(path: path) }
        let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw HidrawOpenError(openErrno: errno, path: path) }
        do {
            return try HidrawDevice(adopting: descriptor, path: path)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    /// Takes ownership of an open descriptor (in tests, one end of an `AF_UNIX` `SOCK_SEQPACKET` pair, which keeps
    /// report boundaries as hidraw does).
    init(adopting descriptor: Int32, path: String) throws(HidrawOpenError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .openFailed(path: "pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        self.descriptor = descriptor
        self.path = path
        (wakeRead, wakeWrite) = (ends[0], ends[1])
    }

    deinit { close() }

    /// Starts the thread. Call once.
    func start(_ callbacks: Callbacks) {
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started && !state.closing
        }
        guard start else { return }
        let thread = Thread { [self] in run(callbacks) }
        thread.name = "passkey hidraw \(path)"
        thread.start()
    }

    /// Queues one 64-byte output report; the thread writes it.
    func write(report: [UInt8]) {
        state.withLock { state in
            guard !state.closing, !state.descriptorsClosed else { return }
            state.queued.append(report)
            wake()
        }
    }

    /// Ends the thread (which then reports `end(nil)` and closes the descriptors). Closing twice is harmless.
    func close() {
        state.withLock { state in
            guard !state.descriptorsClosed else { return }
            state.closing = true
            if state.started {
                wake()
            } else {
                state.descriptorsClosed = true
                closeDescriptors()
            }
        }
    }

    // MARK: The thread

    private func run(_ callbacks: Callbacks) {
        let failure = serve(callbacks)
        state.withLock { state in
            state.descriptorsClosed = true
            closeDescriptors()
        }
        callbacks.end(failure)
    }

    /// Reads and writes until closed (`nil`) or until the device fails.
    private func serve(_ callbacks: Callbacks) -> CTAPHIDConnectionError? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var descriptors = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&descriptors, 2, -1) < 0 {
                if errno == EINTR { continue }
                return .deviceFailed(operation: "poll", errno: errno)
            }
            if descriptors[1].revents != 0 {
                drainWakePipe()
                let (closing, reports) = state.withLock { state in
                    defer { state.queued = [] }
                    return (state.closing, state.queued)
                }
                if closing { return nil }
                for report in reports {
                    if let failure = writeReport(report) { return failure }
                }
            }
            let events = descriptors[0].revents
            if events & Int16(POLLIN) != 0 {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return .deviceFailed(operation: "read", errno: errno)
                }
                if count == 0 { return .deviceFailed(operation: "read", errno: ENODEV) }
                if count == Self.reportSize { callbacks.report(Array(buffer.prefix(count))) }
            } else if events & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                return .deviceFailed(operation: "poll", errno: ENODEV)
            }
        }
    }

    /// Writes the report number 0 and the report in one call.
    private func writeReport(_ report: [UInt8]) -> CTAPHIDConnectionError? {
        let bytes = [0] + report
        while true {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written == bytes.count { return nil }
            if written < 0 && errno == EINTR { continue }
            return .deviceFailed(operation: "write", errno: written < 0 ? errno : EIO)
        }
    }

    private func wake() {
        let byte: [UInt8] = [1]
        _ = byte.withUnsafeBytes { Glibc.write(wakeWrite, $0.baseAddress, 1) }
    }

    private func drainWakePipe() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while bytes.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func closeDescriptors() {
        _ = Glibc.close(descriptor)
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }
}
