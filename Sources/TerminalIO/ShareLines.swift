import Basics
import CTAP2
import Hybrid
import JSON
import NearbyShare
import NearbyShareDriver
import Proximity

/// `passkey share` and `passkey receive` as a person reads them: each step of the session as a status line, and
/// what became of the passkey. Every name a site chose is escaped.
public enum ShareLines {
    /// The receiver's status line for `event`; nil for steps a share does not show (it has its own QR code, drawn
    /// by the command, and no linked phone).
    public static func receiver(_ event: ShareReceiverProgress, radio: ProximityMode) -> String? {
        switch event {
        case .showQRCode:
            "waiting for the sender to scan the QR code and come near (Bluetooth: \(radio))"
        case .hybrid(.advertSeen(let routingID, let domain)):
            "advert seen: the sender is near; relay \(domain.host), routing ID \(routingID)"
        case .hybrid(.tunnelConnected(let url)):
            "tunnel connected: \(PhoneLines.host(of: url))"
        case .hybrid(.handshakeDone):
            "handshake done: end-to-end encrypted"
        case .hybrid(.requestSent), .hybrid(.responseReceived), .hybrid(.showQRCode), .hybrid(.contacting),
            .hybrid(.linkedPhoneNear):
            nil
        case .passkeyReceived:
            "passkey received: sealed to this QR code and this session, and checked"
        case .acknowledged(let outcome):
            "the sender was told: \(outcome)"
        case .acknowledgementFailed(let reason):
            "the sender could not be told what was done here: \(reason)"
        }
    }

    /// The sender's status line for a step of its session, which runs as a phone's does.
    public static func sender(_ event: HybridAuthenticatorProgress, radio: ProximityMode) -> String {
        switch event {
        case .connecting(let url): "connecting to the relay \(PhoneLines.host(of: url))"
        case .advertising(let routingID): "tunnel registered (routing ID \(routingID)); advertising over \(radio)"
        case .handshakeDone: "receiver connected: handshake done"
        case .requestReceived(let command):
            command == ShareCommand.request.rawValue ? "the receiver asks for the passkey" : "the receiver acknowledges"
        case .responseSent(let status):
            status == 0 ? "answer sent" : "refused (status 0x\([status].upperHexString))"
        }
    }

    /// What the receiver did with `credential`, on standard output as soon as it is done: a passkey added or
    /// already held. Nothing for a passkey the person declined, which the command reports as its failure
    /// (``declinedHere``).
    public static func received(_ outcome: ShareOutcome, _ credential: StoredCredential) -> [String] {
        let site = credential.relyingPartyID.terminalSafe
        let name = (credential.userName ?? "no name").siteChosen
        switch outcome {
        case .added:
            return [
                "Added the passkey for \(name) at \(site).", "  credential ID  \(credential.id.base64URLEncodedString)",
            ]
        case .alreadyPresent:
            return ["This store already has that passkey (\(site), \(name)); nothing was added."]
        default:
            return []
        }
    }

    /// What `share --json` and `receive --json` print once the passkey is where it was meant to go:
    /// `{"credentialId": B64URL, "outcome": "added" or "alreadyPresent", "rpId": RPID, "userName": NAME}` (no
    /// `userName` when the passkey has none); nil for any other outcome, which the command reports as its failure.
    public static func json(_ outcome: ShareOutcome, _ credential: StoredCredential) -> JSONValue? {
        let name: String
        switch outcome {
        case .added: name = "added"
        case .alreadyPresent: name = "alreadyPresent"
        default: return nil
        }
        return .object(omittingNil: [
            ("credentialId", .string(credential.id.base64URLEncodedString)),
            ("outcome", .string(name)),
            ("rpId", .string(credential.relyingPartyID)),
            ("userName", credential.userName.map { .string($0) }),
        ])
    }

    /// The receiving command's failure when the person declined the passkey.
    public static let declinedHere = "nothing was added: you declined the passkey"

    /// What the receiver answered the sender of `credential`.
    public static func shared(_ outcome: ShareOutcome, _ credential: StoredCredential) -> Result<String, Failure> {
        let account = "\((credential.userName ?? "no name").siteChosen) at \(credential.relyingPartyID.terminalSafe)"
        switch outcome {
        case .added: return .success("Shared the passkey for \(account): the receiver added it.")
        case .alreadyPresent: return .success("The receiver already had the passkey for \(account); nothing changed.")
        case .declined: return .failure(Failure(message: "the receiver declined the passkey for \(account)"))
        default: return .failure(Failure(message: "the receiver refused the passkey for \(account) (\(outcome))"))
        }
    }

    /// A share that ended without the passkey where it was meant to go.
    public struct Failure: Error, Equatable {
        public let message: String
    }
}
