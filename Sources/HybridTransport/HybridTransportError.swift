import Hybrid
import Proximity

/// Why a hybrid sign-in over real sockets and radios ended early. Each case reads as one plain sentence.
public enum HybridTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The client showed its QR code but no advert for it arrived in time: no authenticator nearby scanned it.
    /// The client never contacts the relay in this case (a QR code seen from afar must not work).
    case noNearbyAuthenticator(timeout: Duration)
    /// The authenticator advertised but no client started the handshake in time.
    case clientNeverConnected(timeout: Duration)
    /// The Bluetooth radio (BlueZ or simulated) could not be used.
    case radio(ProximityError)
    /// The relay could not be reached, refused the tunnel, or the tunnel failed.
    case tunnel(TunnelError)
    /// The hybrid protocol failed: a bad handshake, a message that did not decrypt, a protocol violation.
    case session(HybridSessionError)
    /// The QR code could not be made or read.
    case qrCode(QRCodeError)
    /// The relay's routing ID header was missing or malformed.
    case badRoutingID(String)

    public var description: String {
        switch self {
        case .noNearbyAuthenticator(let timeout):
            "no nearby authenticator answered within \(Self.seconds(timeout)) (scan the QR code with a phone "
                + "or `passkey scan` that can reach this computer's Bluetooth radio)"
        case .clientNeverConnected(let timeout):
            "no client connected through the relay within \(Self.seconds(timeout)) of advertising"
        case .radio(let error): error.description
        case .tunnel(let error): error.description
        case .session(let error): error.description
        case .qrCode(let error): "QR code: \(error)"
        case .badRoutingID(let value): "the relay sent an invalid X-caBLE-Routing-ID header: \(value)"
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}

/// Time limits of a hybrid session. The defaults match what phones and browsers allow.
public struct HybridTimeouts: Hashable, Sendable {
    /// Client: how long the QR code waits for an advert.
    public var advert = Duration.seconds(120)
    /// Both: opening the WebSocket to the relay.
    public var connect = Duration.seconds(10)
    /// Authenticator: how long it advertises before a client starts the handshake.
    /// Client: how long it waits for the handshake answer and post-handshake message.
    public var handshake = Duration.seconds(120)
    /// Client: how long the authenticator has to answer a request (the user is asked on the phone).
    /// Authenticator: how long it waits for the next request.
    public var request = Duration.seconds(120)

    public init() {}

    /// One limit for everything (tests).
    public init(all: Duration) {
        advert = all
        connect = all
        handshake = all
        request = all
    }
}
