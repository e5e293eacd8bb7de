import Hybrid
import WebSocketMessages

/// Why a tunnel could not be opened or used. Each case names its reason; the prose is in ``description``.
public enum TunnelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The URL is not a `ws://` or `wss://` URL with a host.
    case invalidURL(String)
    /// No TCP (or TLS) connection could be made.
    case unreachable(host: String, port: Int, reason: ConnectionFault)
    /// The server answered the upgrade with this HTTP status instead of 101.
    case refused(status: Int)
    /// The server's answer to the upgrade broke the tunnel protocol.
    case badUpgrade(UpgradeFault)
    /// Nothing arrived within the time allowed; the value says what was awaited ("waiting for the handshake").
    case timedOut(String)
    /// The task waiting in ``TunnelConnection/receive(timeout:waitingFor:)`` was cancelled; the value says what it
    /// awaited. The tunnel stays open.
    case cancelled(String)
    /// The relay sent what a tunnel does not allow (a text frame, an oversize message, a masked frame, …); the
    /// tunnel was closed with the violation's close code.
    case protocolViolation(WebSocketViolation)
    /// The connection failed while open.
    case connectionFailed(ConnectionFault)
    /// The peer sent more than ``TunnelConnection/maximumQueuedMessages`` messages (or
    /// ``TunnelConnection/maximumQueuedBytes`` bytes) that were not received yet: a flood, so the tunnel was
    /// closed (1008).
    case tooManyUnreadMessages
    /// ``TunnelConnection/receive(timeout:waitingFor:)`` was called while another call on the same tunnel waited.
    case concurrentReceive
    /// The relay closed the tunnel with one of the wake channel's codes (`ListenerCloseCode`, for example 4404: no
    /// phone answered a wake).
    case closedByRelay(code: UInt16)

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a ws:// or wss:// tunnel URL: \(url)"
        case .unreachable(let host, let port, let reason): "relay \(host):\(port) unreachable: \(reason)"
        case .refused(let status): "relay refused the tunnel (HTTP \(status))"
        case .badUpgrade(let fault): "relay answered the upgrade wrongly: \(fault)"
        case .timedOut(let what): "timed out \(what)"
        case .cancelled(let what): "cancelled while \(what)"
        case .protocolViolation(let violation): "tunnel protocol violation: the relay sent \(violation)"
        case .connectionFailed(let fault): "tunnel connection failed: \(fault)"
        case .tooManyUnreadMessages:
            "the peer sent more than \(TunnelConnection.maximumQueuedMessages) messages or "
                + "\(TunnelConnection.maximumQueuedBytes) bytes that were not read yet; tunnel closed"
        case .concurrentReceive: "two readers on one tunnel"
        case .closedByRelay(let code):
            "the relay closed the tunnel with code \(code)"
                + (ListenerCloseCode.describe(code).map { ": \($0)" } ?? "")
        }
    }
}

extension TunnelError {
    /// What was wrong with the server's answer to the upgrade request.
    public enum UpgradeFault: Hashable, Sendable, CustomStringConvertible {
        /// The answer did not select the subprotocol `fido.cable`.
        case subprotocolNotSelected
        /// The answer carried `X-caBLE-Routing-ID` more than once.
        case routingIDRepeated
        /// The 101 answer's `Upgrade`, `Connection` or `Sec-WebSocket-Accept` header was missing or wrong.
        case invalidHandshake
        /// The answer was not HTTP/1.1.
        case malformedResponse
        /// The connection closed before a complete answer.
        case closedEarly

        public var description: String {
            switch self {
            case .subprotocolNotSelected: "the server did not select subprotocol fido.cable"
            case .routingIDRepeated: "the server sent X-caBLE-Routing-ID twice"
            case .invalidHandshake: "the server's WebSocket handshake headers are missing or wrong"
            case .malformedResponse: "the answer is not HTTP/1.1"
            case .closedEarly: "the connection closed before the answer was complete"
            }
        }
    }

    /// Why a connection could not be made or failed.
    public enum ConnectionFault: Hashable, Sendable, CustomStringConvertible {
        /// The TCP connection was not made in time.
        case timedOut
        /// The TLS configuration could not be loaded; the value is the TLS library's message.
        case tlsConfiguration(String)
        /// The TLS handshake or session failed; the value is the TLS library's message.
        case tls(String)
        /// A system call failed: the value is the system's message and `errno`.
        case system(String)
        /// The connection closed while it was in use.
        case closed
        /// Any other error of the network stack, as it describes itself.
        case other(String)

        public var description: String {
            switch self {
            case .timedOut: "connection timed out"
            case .tlsConfiguration(let message): "TLS set-up failed: \(message)"
            case .tls(let message): "TLS failed: \(message)"
            case .system(let message): message
            case .closed: "the connection closed"
            case .other(let message): message
            }
        }
    }
}
