import Basics

/// Why a hybrid session ended early. Every error closes the session. Each case names its reason; the prose is in
/// `description` only.
public enum HybridSessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Noise handshake failed (wrong key, PSK, length or tag).
    case handshake(NoiseError)
    /// An encrypted message did not decrypt, or the counters ran out.
    case crypter(CrypterError)
    /// The authenticator's post-handshake message or an update was malformed.
    case postHandshake(PostHandshakeError)
    /// A message after the handshake was badly framed.
    case framing(FramingError)
    /// Linking information came with a bad signature or malformed fields.
    case linking(LinkingError)
    /// The peer (or the caller) did something the protocol does not allow at this point.
    case protocolViolation(HybridProtocolViolation)
    /// The relay's `X-caBLE-Routing-ID` header was missing (`nil`) or malformed (its first 16 characters).
    case badRoutingID(String?)
    /// The client showed its QR code but no advert for it arrived in time: no authenticator nearby scanned it.
    /// The client never contacts the relay in this case (a QR code seen from afar must not work).
    case noNearbyAuthenticator(timeout: Duration)
    /// Linked: the relay took the contact request, but the phone's advert did not arrive in time (it was not woken,
    /// or it is not near).
    case linkedPhoneNotNear(timeout: Duration)
    /// The authenticator advertised but no client started the handshake in time.
    case clientNeverConnected(timeout: Duration)
    /// The peer did not send what the session waited for in time.
    case timedOut(HybridWait, timeout: Duration)
    /// The tunnel closed before the session finished.
    case tunnelClosed

    public var description: String {
        switch self {
        case .handshake(let error): "hybrid handshake failed: \(error)"
        case .crypter(let error): "hybrid message rejected: \(error)"
        case .postHandshake(let error): "hybrid post-handshake message rejected: \(error)"
        case .framing(let error): "hybrid message framing rejected: \(error)"
        case .linking(let error): "hybrid linking information rejected: \(error)"
        case .protocolViolation(let violation): "hybrid protocol violation: \(violation)"
        case .badRoutingID(let value): "the relay sent an invalid X-caBLE-Routing-ID header: \(value ?? "(missing)")"
        case .noNearbyAuthenticator(let timeout):
            "no nearby authenticator answered within \(timeout.secondsDescription) (scan the QR code with a phone "
                + "or `passkey scan` that can reach this computer's Bluetooth radio)"
        case .linkedPhoneNotNear(let timeout):
            "the linked phone did not come near within \(timeout.secondsDescription) (it must be woken through its "
                + "relay, by `passkey listen`, and reach this computer's Bluetooth radio)"
        case .clientNeverConnected(let timeout):
            "no client connected through the relay within \(timeout.secondsDescription) of advertising"
        case .timedOut(let wait, let timeout): "timed out \(wait) (\(timeout.secondsDescription))"
        case .tunnelClosed: "the tunnel closed before the hybrid session finished"
        }
    }
}

/// Why a linked (state-assisted) client session could not be made from stored linking information.
public enum LinkedSessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stored linking information is unusable (its identity key, or an empty contact ID).
    case linking(LinkingError)
    /// The client payload could not be built (a link ID or nonce of the wrong size).
    case clientPayload(ClientPayloadError)

    public var description: String {
        switch self {
        case .linking(let error): "the stored link is unusable: \(error)"
        case .clientPayload(let error): "the stored link is unusable: \(error)"
        }
    }
}

/// What a session waited for when its timer expired.
public enum HybridWait: Hashable, Sendable, CustomStringConvertible {
    /// Client: the authenticator's handshake answer and post-handshake message.
    case handshake
    /// Client: the authenticator's answer to a CTAP request.
    case response
    /// Authenticator: the client's next request.
    case nextRequest

    public var description: String {
        switch self {
        case .handshake: "waiting for the authenticator's handshake"
        case .response: "waiting for the authenticator's answer"
        case .nextRequest: "waiting for a request from the client"
        }
    }
}

/// Something the hybrid protocol does not allow at the point where it happened.
public enum HybridProtocolViolation: Hashable, Sendable, CustomStringConvertible {
    /// A message was to be sealed or opened before the handshake made keys.
    case noSessionKeys
    /// Client: the tunnel opened before an advert matched the QR code.
    case tunnelOpenedBeforeAdvert
    /// Client: a tunnel message arrived before the handshake started.
    case messageBeforeHandshake
    /// Client: the post-handshake message offers no CTAP (or no getInfo).
    case noCTAP
    /// Client: a CTAP response arrived with no request outstanding.
    case responseWithoutRequest
    /// Client: a message of this type is not allowed from an authenticator after the handshake.
    case unexpectedMessageType(UInt8)
    /// Client: a CTAP request was sent while not ready or while another was outstanding.
    case requestWhileBusy
    /// Authenticator: the tunnel was reported open twice.
    case tunnelOpenedTwice
    /// Authenticator: the advert could not be built.
    case unbuildableAdvert(AdvertError)
    /// Authenticator: a tunnel message arrived before the advert was sent.
    case messageBeforeAdvert
    /// Authenticator: a message of this type is not allowed from a client.
    case unexpectedClientMessageType(UInt8)
    /// Authenticator: a second request arrived before the first was answered.
    case secondRequest
    /// Authenticator: a CTAP response was given with no request outstanding.
    case answerWithoutRequest

    public var description: String {
        switch self {
        case .noSessionKeys: "no session keys yet"
        case .tunnelOpenedBeforeAdvert: "the tunnel opened before an advert matched"
        case .messageBeforeHandshake: "a tunnel message arrived before the handshake started"
        case .noCTAP: "the authenticator does not offer CTAP"
        case .responseWithoutRequest: "a CTAP response arrived with no request outstanding"
        case .unexpectedMessageType(let type): "unexpected message type \(type)"
        case .requestWhileBusy: "a CTAP request can only be sent when ready and idle"
        case .tunnelOpenedTwice: "the tunnel opened twice"
        case .unbuildableAdvert(let error): "cannot build the advert: \(error)"
        case .messageBeforeAdvert: "a tunnel message arrived before the advert was sent"
        case .unexpectedClientMessageType(let type): "unexpected message type \(type) from the client"
        case .secondRequest: "a second request arrived before the first was answered"
        case .answerWithoutRequest: "a CTAP response with no request outstanding"
        }
    }
}

/// Time limits of a hybrid session. The defaults match what phones and browsers allow. The sessions arm their
/// timers with these; `connect` is the drivers' limit for opening the WebSocket.
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
