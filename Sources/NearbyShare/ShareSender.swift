import Basics
import CTAP2
import Crypto
import CredentialExchange
import Foundation

/// The sender's side of the share protocol, as a state machine: each request from the receiver in, the answer out
/// (the hybrid authenticator link carries both). It seals its one passkey when the share request arrives, bound to
/// the session's handshake hash, answers at most one share request, then takes the acknowledgement. Anything else
/// is answered with an error status and ends the share as `.failed`.
///
/// The CXF document with the private key is held in memory only, for as long as this value lives.
public struct ShareSender: Sendable {
    /// Where the share is.
    public enum Phase: Hashable, Sendable {
        /// Waiting for the share request.
        case waiting
        /// The share message went out; waiting for the acknowledgement.
        case offered
        /// The receiver said what it did with the passkey.
        case acknowledged(ShareOutcome)
        /// The receiver broke the protocol; nothing more is answered.
        case failed(ShareError)
    }

    /// CTAP1_ERR_INVALID_COMMAND: a command this protocol does not have, or one out of order.
    public static let invalidCommand: UInt8 = 0x01
    /// CTAP2_ERR_NOT_ALLOWED: a second share request.
    public static let notAllowed: UInt8 = 0x30

    public private(set) var phase = Phase.waiting
    private let document: [UInt8]
    private let recipient: ShareQRCode

    /// A sender of `credential` to the receiver whose QR code was scanned. A credential that is not backup
    /// eligible (BE = 0) may not leave its store, as in `passkey export`.
    public init(_ credential: StoredCredential, to recipient: ShareQRCode, at date: Date) throws(ShareError) {
        guard CXF.Header.exportable([credential]).exported.count == 1 else {
            throw ShareError(.singleDevice, "this passkey is single-device (not backup eligible): it may not be shared")
        }
        document =
            CXF.Header(
                exporting: [credential], exporterRpId: "passkey.local", exporterDisplayName: "passkey share", at: date
            ).jsonBytes
        self.recipient = recipient
    }

    /// Answers one request (command byte and CBOR) with status byte and CBOR. `handshakeHash` is the hybrid session's.
    public mutating func answer(_ request: [UInt8], handshakeHash: [UInt8]) -> [UInt8] {
        let message: ShareRequestMessage
        do throws(ShareError) {
            message = try ShareRequestMessage(bytes: request)
        } catch {
            return fail(error, status: Self.invalidCommand)
        }
        switch (phase, message) {
        case (.waiting, .request(let version)):
            guard version == ShareQRCode.version else {
                return fail(
                    ShareError(.unsupportedVersion, "the receiver asks for version \(version); this program speaks 1"),
                    status: Self.invalidCommand)
            }
            do throws(ExchangeError) {
                let sealed = try ExchangeHPKE.seal(
                    document, to: recipient.sealingKey, info: ShareProtocol.hpkeInfo,
                    authenticating: ShareBinding.aad(handshakeHash: handshakeHash, qrCode: recipient))
                phase = .offered
                return ShareOffer(sealed: sealed).response
            } catch {
                return fail(
                    ShareError(.sealingFailed, "the passkey could not be sealed: \(error.message)"), status: 0x7F)
            }
        case (.offered, .acknowledge(let outcome)):
            phase = .acknowledged(outcome)
            return [0x00]
        case (.offered, .request), (.acknowledged, .request):
            return fail(
                ShareError(.replayed, "the receiver asked for the passkey a second time; one share per session"),
                status: Self.notAllowed)
        case (.waiting, .acknowledge), (.acknowledged, .acknowledge):
            return fail(ShareError(.unexpectedMessage, "an acknowledgement out of order"), status: Self.invalidCommand)
        case (.failed, _):
            return [Self.invalidCommand]
        }
    }

    private mutating func fail(_ error: ShareError, status: UInt8) -> [UInt8] {
        if case .failed = phase { return [status] }
        phase = .failed(error)
        return [status]
    }
}

/// What the HPKE seal authenticates besides the item: the session it belongs to.
public enum ShareBinding {
    /// `"passkey share v1 aad" ‖ handshake hash (32 bytes) ‖ SHA-256(QR code CBOR)`. The handshake hash binds the
    /// sealed item to this Noise session (its keys, the PSK from the QR secret and the advert); the QR digest binds it
    /// to the very code the receiver showed, sealing key included. A share message replayed into any other session,
    /// or to another receiver, does not open.
    public static func aad(handshakeHash: [UInt8], qrCode: ShareQRCode) -> [UInt8] {
        Array("passkey share v1 aad".utf8) + handshakeHash + SHA256.hash(data: qrCode.cborBytes).bytes
    }
}
