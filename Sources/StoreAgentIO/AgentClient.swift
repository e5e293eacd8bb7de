import CTAP2
import Foundation
import PasskeyStoreIO
import StoreAgent

#if canImport(Glibc)
    import Glibc
#endif

/// A connection to the store agent, one request and reply at a time.
public struct AgentClient: Sendable {
    public let socketPath: String

    public init(socketPath: String) { self.socketPath = socketPath }

    /// The client for the socket under `environment`'s `XDG_RUNTIME_DIR`; nil when it is unset.
    public init?(environment: [String: String]) {
        guard let path = try? AgentSocket.path(environment: environment) else { return nil }
        self.init(socketPath: path)
    }

    /// Whether an agent answers at the socket.
    public var isAnswering: Bool {
        guard let fd = try? connect() else { return false }
        close(fd)
        return true
    }

    /// Sends `request` and waits up to `timeout` for the reply.
    public func send(_ request: AgentRequest, timeout: Duration = .seconds(30)) throws(AgentError) -> AgentReply {
        let fd = try connect()
        defer { close(fd) }
        guard AgentSocket.writeAll(fd, AgentCodec.frame(AgentCodec.encode(request))) else {
            throw AgentError("the passkey agent closed the connection")
        }
        guard let body = try AgentSocket.readFrame(fd, timeout: timeout) else {
            throw AgentError("the passkey agent did not answer")
        }
        do {
            return try AgentCodec.decodeReply(body)
        } catch {
            throw AgentError("the passkey agent's reply does not parse: \(error.reason)")
        }
    }

    private func connect() throws(AgentError) -> Int32 {
        guard var address = AgentSocket.address(socketPath) else {
            throw AgentError("the agent's socket path \(socketPath) is too long")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentError("cannot make a socket: \(AgentSocket.reason(errno))") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw AgentError("no passkey agent is running")
        }
        return fd
    }
}

/// A store key held by the agent: every seal is opened, made or authenticated there (``StoreKeyring``).
public struct AgentKeyring: StoreKeyring {
    public let client: AgentClient
    /// The store's resolved path, as the agent knows it.
    public let store: String

    public init(client: AgentClient, store: String) {
        self.client = client
        self.store = store
    }

    public func seal(_ plaintext: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8] {
        guard case .bytes(let sealed) = try ask(.seal(store: store, use: use.rawValue, aad: aad, bytes: plaintext))
        else { throw lost }
        return sealed
    }

    public func open(_ sealed: [UInt8], aad: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8]? {
        switch try ask(.open(store: store, use: use.rawValue, aad: aad, bytes: sealed)) {
        case .bytes(let opened): return opened
        case .doesNotOpen: return nil
        default: throw lost
        }
    }

    public func authenticationCode(_ message: [UInt8], use: StoreKeyUse) throws(CredentialStoreError) -> [UInt8] {
        guard case .bytes(let code) = try ask(.authenticate(store: store, use: use.rawValue, bytes: message)) else {
            throw lost
        }
        return code
    }

    private var lost: CredentialStoreError {
        CredentialStoreError(
            .io, "the passkey agent no longer holds the store's key (it timed out or was locked); run the command again"
        )
    }

    private func ask(_ request: AgentRequest) throws(CredentialStoreError) -> AgentReply {
        let reply: AgentReply
        do {
            reply = try client.send(request)
        } catch {
            throw CredentialStoreError(.io, "the passkey agent stopped answering: \(error.message)")
        }
        if case .refused(let reason) = reply { throw CredentialStoreError(.io, "the passkey agent refused: \(reason)") }
        return reply
    }
}
