/// The session's crypter once the handshake has made one, failing in the session's own error type. Both roles
/// own one; before the handshake and after the end it holds no keys and refuses to seal or open.
struct SessionChannel: ~Copyable {
    private var crypter: Crypter?

    init() {}

    /// Takes the crypter the handshake produced.
    mutating func establish(_ crypter: consuming Crypter) {
        self.crypter = .some(crypter)
    }

    /// Drops the keys.
    mutating func close() {
        crypter = nil
    }

    mutating func open(_ message: [UInt8]) throws(HybridSessionError) -> [UInt8] {
        guard crypter != nil else { throw .protocolViolation(.noSessionKeys) }
        do throws(CrypterError) {
            return try crypter!.decrypt(message)
        } catch {
            throw .crypter(error)
        }
    }

    mutating func seal(_ plaintext: [UInt8]) throws(HybridSessionError) -> [UInt8] {
        guard crypter != nil else { throw .protocolViolation(.noSessionKeys) }
        do throws(CrypterError) {
            return try crypter!.encrypt(plaintext)
        } catch {
            throw .crypter(error)
        }
    }

    mutating func seal(_ frame: TunnelFrame, revision: ProtocolRevision) throws(HybridSessionError) -> [UInt8] {
        let plaintext: [UInt8]
        do throws(FramingError) {
            plaintext = try frame.plaintext(revision: revision)
        } catch {
            throw .framing(error)
        }
        return try seal(plaintext)
    }
}

/// Where a client-side hybrid session is, for status lines: the session reports each step as it happens.
public enum HybridClientProgress: Hashable, Sendable {
    /// Show this `FIDO:/` URL as a QR code; the radio is scanning.
    case showQRCode(url: String)
    /// An advert for this QR code arrived: the authenticator is near and named its relay.
    case advertSeen(routingID: RoutingID, domain: TunnelDomain)
    /// The tunnel to the relay is open (`url` without secrets: the tunnel ID is derived from the QR secret but
    /// reveals nothing about it).
    case tunnelConnected(url: String)
    /// The Noise handshake finished and the authenticator's getInfo arrived.
    case handshakeDone
    /// A CTAP request went out (command byte given).
    case requestSent(command: UInt8)
    /// Its answer came back (CTAP status byte given).
    case responseReceived(status: UInt8)
    /// Linked: asking the relay at `url` (`/cable/contact/…`: show only its host, the path names the phone) to
    /// wake the phone.
    case contacting(url: String)
    /// Linked: the phone's advert arrived; it is near, and the handshake starts.
    case linkedPhoneNear
}

/// Where an authenticator-side hybrid session is, for status lines.
public enum HybridAuthenticatorProgress: Hashable, Sendable {
    /// Opening `/cable/new/…` on the relay.
    case connecting(url: String)
    /// The relay registered the tunnel under this routing ID; the advert is on the air.
    case advertising(routingID: RoutingID)
    /// The client answered the advert: handshake done, getInfo sent.
    case handshakeDone
    /// A CTAP request arrived (command byte given).
    case requestReceived(command: UInt8)
    /// Its answer went out (CTAP status byte given).
    case responseSent(status: UInt8)
}
