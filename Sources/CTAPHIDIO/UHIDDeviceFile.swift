import Synchronization
import UHID

#if canImport(Glibc)
    import Glibc
#endif

/// Why the uhid device cannot be created or used.
public enum UHIDError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kernel has no uhid driver: the device file is missing (ENOENT) or has no driver behind it (ENODEV,
    /// ENXIO).
    case kernelLacksUHID(path: String)
    /// The device file exists but this user may not open it for reading and writing (EACCES, EPERM).
    case permissionDenied(path: String)
    /// Opening the device file failed for another reason (the errno value).
    case openFailed(path: String, errno: Int32)
    /// The kernel refused an event written to the device (the event name and the errno value); for
    /// `UHID_CREATE2`, the device was not created.
    case writeFailed(event: String, errno: Int32)
    /// Reading from the device failed (the errno value).
    case readFailed(errno: Int32)

    /// Classifies the errno of a failed `open` of `path`.
    public init(openErrno: Int32, path: String) {
        switch openErrno {
        case ENOENT, ENODEV, ENXIO: self = .kernelLacksUHID(path: path)
        case EACCES, EPERM: self = .permissionDenied(path: path)
        default: self = .openFailed(path: path, errno: openErrno)
        }
    }

    public var description: String {
        switch self {
        case .kernelLacksUHID(let path):
            "this kernel has no uhid support (\(path) missing or without a driver): load the uhid module "
                + "(`sudo modprobe uhid`, and add `uhid` to /etc/modules-load.d/ to keep it) or use a kernel "
                + "built with CONFIG_UHID; see Docs/Transports.md"
        case .permissionDenied(let path):
            "no permission to open \(path) for reading and writing: add a udev rule such as "
                + "`KERNEL==\"uhid\", GROUP=\"uhid\", MODE=\"0660\"` and join that group, or run with sudo; "
                + "see Docs/Transports.md"
        case .openFailed(let path, let code):
            "cannot open \(path): \(errorText(code))"
        case .writeFailed(let event, let code):
            "the kernel refused \(event) on uhid: \(errorText(code))"
        case .readFailed(let code):
            "reading from uhid failed: \(errorText(code))"
        }
    }
}

private func errorText(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }

/// The file the uhid events travel through: /dev/uhid, or a stand-in in tests.
///
/// ``read()`` blocks, so it is only called on a dedicated thread; ``interrupt()`` makes a blocked or later
/// ``read()`` return `nil`. ``write(_:)`` writes one whole event and never waits: it runs on an event loop.
public protocol UHIDDeviceFile: Sendable {
    /// Writes one event of ``UHIDLayout/eventSize`` bytes, without waiting for the reader.
    func write(_ event: [UInt8]) throws(UHIDError)
    /// Waits for the next event and returns its bytes, or `nil` at end of file or after ``interrupt()``.
    func read() throws(UHIDError) -> [UInt8]?
    /// Ends a blocked ``read()``, and every later one, with `nil`.
    func interrupt()
    /// Closes the file. Only called once no ``read()`` is running.
    func close()
}

/// A ``UHIDDeviceFile`` over a file descriptor: /dev/uhid, or one end of a socket pair in tests.
///
/// Reads poll the descriptor together with a pipe that ``interrupt()`` writes to, so a blocked read can be ended
/// without closing the descriptor under it. The descriptor is non-blocking: the kernel's uhid driver takes every
/// write at once, and a stand-in whose reader has stopped reading makes ``write(_:)`` fail with `EAGAIN` (the
/// report is lost, as it is for a HID host that stops polling) instead of stopping the event loop that writes.
public final class UHIDFileDescriptor: UHIDDeviceFile {
    /// The default device file.
    public static let defaultPath = "/dev/uhid"

    private let descriptor: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let closed = Mutex(false)

    /// Opens a uhid device file for reading and writing.
    /// - Throws: ``UHIDError/kernelLacksUHID(path:)``, ``UHIDError/permissionDenied(path:)`` or
    ///   ``UHIDError/openFailed(path:errno:)``.
    public static func open(path: String = defaultPath) throws(UHIDError) -> UHIDFileDescriptor {
        let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw UHIDError(openErrno: errno, path: path) }
        do {
            return try UHIDFileDescriptor(adopting: descriptor)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    /// Takes ownership of an open descriptor (for tests, one end of an `AF_UNIX` `SOCK_SEQPACKET` pair, which
    /// keeps event boundaries as /dev/uhid does).
    public init(adopting descriptor: Int32) throws(UHIDError) {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw .openFailed(path: "pipe", errno: errno) }
        for end in pipeEnds {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        self.descriptor = descriptor
        (wakeRead, wakeWrite) = (pipeEnds[0], pipeEnds[1])
    }

    deinit { close() }

    public func write(_ event: [UInt8]) throws(UHIDError) {
        let name = event.count >= 4 ? Self.eventName(event) : "a short event"
        while true {
            let written = event.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written == event.count { return }
            if written < 0 && errno == EINTR { continue }
            throw .writeFailed(event: name, errno: written < 0 ? errno : EIO)
        }
    }

    public func read() throws(UHIDError) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: UHIDLayout.eventSize)
        while true {
            var descriptors = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .readFailed(errno: errno)
            }
            if descriptors[1].revents != 0 { return nil }
            guard descriptors[0].revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .readFailed(errno: errno)
            }
            if count == 0 { return nil }
            return Array(buffer.prefix(count))
        }
    }

    public func interrupt() {
        let byte: [UInt8] = [1]
        _ = byte.withUnsafeBytes { Glibc.write(wakeWrite, $0.baseAddress, 1) }
    }

    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        _ = Glibc.close(descriptor)
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    private static func eventName(_ event: [UInt8]) -> String {
        let type = UInt32(event[0]) | UInt32(event[1]) << 8 | UInt32(event[2]) << 16 | UInt32(event[3]) << 24
        return switch type {
        case UHIDLayout.EventType.create2: "UHID_CREATE2"
        case UHIDLayout.EventType.destroy: "UHID_DESTROY"
        case UHIDLayout.EventType.input2: "UHID_INPUT2"
        case UHIDLayout.EventType.getReportReply: "UHID_GET_REPORT_REPLY"
        case UHIDLayout.EventType.setReportReply: "UHID_SET_REPORT_REPLY"
        default: "event type \(type)"
        }
    }
}
