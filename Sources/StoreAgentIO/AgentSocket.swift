import Foundation
import StoreAgent

#if canImport(Glibc)
    import Glibc
#endif

/// Why the agent or its client failed, for people: one sentence, no errno names.
public struct AgentError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Where the agent listens: `$XDG_RUNTIME_DIR/passkey/agent.sock`, the directory mode 0700 and the socket 0600, both
/// owned by this user.
public enum AgentSocket {
    /// The socket's path under `environment`'s `XDG_RUNTIME_DIR`; an error that says so when it is unset or not
    /// absolute.
    public static func path(environment: [String: String]) throws(AgentError) -> String {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            throw AgentError(
                "XDG_RUNTIME_DIR is not set, so there is no private place for the agent's socket "
                    + "(it is set by a graphical or systemd login; set it to a directory only you can use)")
        }
        return (runtime as NSString).appendingPathComponent("passkey/agent.sock")
    }

    /// Makes the socket's directory (mode 0700) and checks that it is a directory of this user's that nobody else
    /// can use: the socket's 0600 mode is not trusted on its own.
    static func preparePrivateDirectory(for socket: String) throws(AgentError) {
        let directory = (socket as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw AgentError("cannot make the agent's directory \(directory): \(reason(errno))")
        }
        var status = stat()
        guard lstat(directory, &status) == 0 else {
            throw AgentError("cannot check the agent's directory \(directory): \(reason(errno))")
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR, status.st_uid == getuid() else {
            throw AgentError("\(directory) is not a directory of yours; the agent will not listen there")
        }
        if status.st_mode & 0o077 != 0, chmod(directory, 0o700) != 0 {
            throw AgentError("cannot make \(directory) private: \(reason(errno))")
        }
    }

    /// A sentence for `code` without the errno name.
    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }

    /// An `AF_UNIX` address for `path`; nil when the path is too long for one.
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Writes all of `bytes` to `fd`; false when the other end went away.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads exactly `count` bytes, waiting at most `timeout` for each part; nil on end, error or time-out.
    static func readExactly(_ fd: Int32, _ count: Int, timeout: Duration) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + 1)
        while offset < count {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let read = bytes[offset...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return nil }
            offset += read
        }
        return bytes
    }

    /// One frame's body (``AgentCodec``), the length checked before anything more is read; nil when the connection
    /// ended, or stayed silent for `timeout`, before a frame began.
    static func readFrame(_ fd: Int32, timeout: Duration) throws(AgentError) -> [UInt8]? {
        guard let header = readExactly(fd, 4, timeout: timeout) else { return nil }
        let length: Int
        do {
            length = try AgentCodec.frameLength(header)
        } catch {
            throw AgentError(error.reason)
        }
        guard let body = readExactly(fd, length, timeout: timeout) else {
            throw AgentError("the connection ended inside a message")
        }
        return body
    }
}
