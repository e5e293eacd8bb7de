import Crypto
import CredentialExchange
import Hybrid

/// The receiver's side of the share protocol: the keys behind its QR code, the request to send once the hybrid
/// handshake is done, and the checks on what comes back. It opens at most one share message (a second one is
/// `.replayed`), and only one sealed to its own sealing key for this very session. It holds the sealing key's
/// private half: keep one value per session and let it go with the session.
public struct ShareReceiver: Sendable {
    /// The code to show.
    public let qrCode: ShareQRCode
    private let sealingKey: P256.KeyAgreement.PrivateKey
    private var opened = false

    /// A receiver for the hybrid QR code a `HybridClientSession` made (its key and secret) and a fresh sealing key,
    /// which must not be the handshake key.
    public init(hybrid: QRCodePayload, sealingKey: P256.KeyAgreement.PrivateKey) throws(ShareQRCodeError) {
        qrCode = try ShareQRCode(
            handshakeKey: hybrid.publicKey, secret: hybrid.secret, sealingKey: sealingKey.publicKey,
            timestamp: hybrid.timestamp)
        self.sealingKey = sealingKey
    }

    /// The share request: the first message after the handshake.
    public var request: [UInt8] { ShareRequestMessage.request(version: ShareQRCode.version).bytes }

    /// The sender's answer to the share request, opened and checked: exactly one passkey that the store would take.
    /// The plaintext document lives only in this call; what comes out is the credential to import.
    public mutating func open(_ response: [UInt8], handshakeHash: [UInt8]) throws(ShareError) -> ImportedPasskey {
        guard !opened else {
            throw ShareError(.replayed, "a second share message in one session; only the first is considered")
        }
        opened = true
        let offer = try ShareOffer(response: response)
        let plaintext: [UInt8]
        do throws(ExchangeError) {
            plaintext = try ExchangeHPKE.open(
                offer.sealed, with: sealingKey, info: ShareProtocol.hpkeInfo,
                authenticating: ShareBinding.aad(handshakeHash: handshakeHash, qrCode: qrCode))
        } catch {
            throw ShareError(
                .wrongKeyOrTampered,
                "the shared passkey does not open: it was sealed for another session or receiver, or changed")
        }
        let document: CXF.Header
        do throws(ExchangeError) {
            document = try CXF.Header(jsonBytes: plaintext)
        } catch {
            throw ShareError(.invalidItem, "the shared item is not a CXF document: \(error.message)")
        }
        guard document.accounts.count == 1, document.accounts[0].items.count == 1,
            document.accounts[0].items[0].credentials.count == 1
        else { throw ShareError(.invalidItem, "the share message is not exactly one item; nothing was stored") }
        let contents: ImportContents
        do throws(ExchangeError) {
            contents = try document.importContents(source: "a passkey shared nearby", wasClearText: false)
        } catch {
            let details = error.problems.map(\.reason).joined(separator: "; ")
            throw ShareError(
                .invalidItem, "the shared passkey fails its checks: \(details.isEmpty ? error.message : details)")
        }
        guard contents.passkeys.count == 1 else {
            throw ShareError(.invalidItem, "the share message holds no passkey; nothing was stored")
        }
        return contents.passkeys[0]
    }

    /// The acknowledgement to send after `outcome`.
    public func acknowledgement(_ outcome: ShareOutcome) -> [UInt8] { ShareRequestMessage.acknowledge(outcome).bytes }

    /// Checks the sender's answer to the acknowledgement: exactly a success status.
    public static func checkAcknowledgementAnswer(_ response: [UInt8]) throws(ShareError) {
        guard response == [0x00] else {
            throw ShareError(.unexpectedMessage, "the sender answered the acknowledgement with something else")
        }
    }
}
