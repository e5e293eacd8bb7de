import Crypto
import Foundation

/// HPKE (RFC 9180) as the exchange uses it: base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, one
/// message per context (single-shot). swift-crypto's `HPKE` does the work.
///
/// `info` names the use, so that a payload sealed for one purpose cannot be opened as another: an export
/// (`ExportResponse.info`) and a passkey shared with a person nearby use different strings.
public enum ExchangeHPKE {
    /// The suite: KEM 0x0010, KDF 0x0001, AEAD 0x0002.
    public static let ciphersuite = HPKE.Ciphersuite.P256_SHA256_AES_GCM_256

    /// A sealed message: the sender's encapsulated key (an uncompressed P-256 point, 65 bytes) and the ciphertext
    /// with its 16-byte tag.
    public struct Sealed: Hashable, Sendable {
        public var encapsulatedKey: [UInt8]
        public var ciphertext: [UInt8]

        public init(encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
            self.encapsulatedKey = encapsulatedKey
            self.ciphertext = ciphertext
        }
    }

    /// Seals `plaintext` to `recipient` with a fresh ephemeral key.
    public static func seal(
        _ plaintext: [UInt8], to recipient: P256.KeyAgreement.PublicKey, info: [UInt8], authenticating aad: [UInt8] = []
    ) throws(ExchangeError) -> Sealed {
        do {
            var sender = try HPKE.Sender(recipientKey: recipient, ciphersuite: ciphersuite, info: Data(info))
            let ciphertext = try sender.seal(plaintext, authenticating: aad)
            return Sealed(encapsulatedKey: Array(sender.encapsulatedKey), ciphertext: Array(ciphertext))
        } catch {
            throw ExchangeError(.invalidKey, "could not seal to this key with HPKE")
        }
    }

    /// Opens a sealed message with the recipient's private key. A wrong key, a wrong `info` or `aad`, and any
    /// changed byte all fail alike, with `.wrongKeyOrTampered`.
    public static func open(
        _ sealed: Sealed, with privateKey: P256.KeyAgreement.PrivateKey, info: [UInt8], authenticating aad: [UInt8] = []
    ) throws(ExchangeError) -> [UInt8] {
        guard sealed.encapsulatedKey.count == 65, sealed.encapsulatedKey.first == 0x04 else {
            throw ExchangeError(.invalidValue, "the HPKE encapsulated key must be an uncompressed P-256 point")
        }
        guard sealed.ciphertext.count >= 16 else {
            throw ExchangeError(.invalidValue, "the HPKE ciphertext is shorter than its tag")
        }
        do {
            var recipient = try HPKE.Recipient(
                privateKey: privateKey, ciphersuite: ciphersuite, info: Data(info),
                encapsulatedKey: Data(sealed.encapsulatedKey))
            return Array(try recipient.open(sealed.ciphertext, authenticating: aad))
        } catch {
            throw ExchangeError(
                .wrongKeyOrTampered, "the payload does not open with this key: the wrong key, or the file was changed")
        }
    }
}
