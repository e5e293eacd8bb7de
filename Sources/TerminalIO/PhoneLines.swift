import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import JSON
import PasskeyProvider
import Proximity

/// The phone's events as status lines (`passkey scan`, `passkey listen`).
public enum PhoneLines {
    public static func line(for event: PhoneEvent) -> String {
        switch event {
        case .qrCodeRead(let creates):
            "QR code read: the computer asks to \(creates ? "create a passkey" : "sign in")"
        case .computerCannotLink:
            "the computer cannot store linking information (its QR code says so): not linking"
        case .registered(let relay):
            "registered with the relay \(relay): it can wake this phone while `passkey listen` runs"
        case .session(let step, let radio, let linked):
            session(step, radio: radio, linked: linked)
        case .linked(let relay, let linkID):
            "linked: the computer can reach this phone through \(relay) while `passkey listen` runs "
                + "(link \(linkID.hexString))"
        case .done(let answered, let listening):
            "done: answered \(answered.counted("request"))" + (listening ? "; listening again" : "")
        case .listener(let event, let relay):
            listener(event, relay: relay)
        case .wakeIgnored(let linkID):
            "woken for link \(linkID.hexString), which this phone does not have: ignored"
        case .linkedSessionFailed(let reason):
            "the linked session failed: \(reason); listening again"
        case .stopped:
            "stopped"
        }
    }

    public static func session(_ event: HybridAuthenticatorProgress, radio: ProximityMode, linked: Bool) -> String {
        switch event {
        case .connecting where linked: "joining the computer's tunnel"
        case .advertising where linked: "tunnel joined; advertising over \(radio)"
        case .connecting(let url): "connecting to the relay \(host(of: url))"
        case .advertising(let routingID): "tunnel registered (routing ID \(routingID)); advertising over \(radio)"
        case .handshakeDone: "computer connected: handshake done, getInfo sent"
        case .requestReceived(let command): "request received: \(CTAPCommand(rawValue: command).name)"
        case .responseSent(let status):
            "answer sent: \(status == 0 ? "OK" : CTAPError(rawValue: status).description)"
        }
    }

    public static func listener(_ event: ContactListenerEvent, relay: String) -> String {
        switch event {
        case .connecting(let attempt):
            attempt == 1 ? "connecting to the relay \(relay)" : "connecting to the relay \(relay) (attempt \(attempt))"
        case .listening: "listening: linked computers can wake this phone through \(relay)"
        case .woken(let linkID): "woken: a linked computer asks for this phone (link \(linkID.hexString))"
        case .badWake(let reason): "a wake was refused: \(reason)"
        case .declined(let linkID):
            "declined a wake for link \(linkID.hexString), which this phone no longer has: the computer forgets it"
        case .disconnected(let reason, let wait):
            "disconnected from the relay (\(reason)); retrying in " + String(format: "%.1f s", wait.inSeconds)
        }
    }

    /// What `passkey scan --json` prints once the computer has closed the tunnel: `{"answered": N}`, with
    /// `"linkId": HEX` when the computer received a link and the phone kept it (`--link`).
    public static func scanJSON(_ outcome: PhoneService.ScanOutcome) -> JSONValue {
        .object(omittingNil: [
            ("answered", .number(Double(outcome.answered))),
            ("linkId", outcome.linkID.map { .string($0.hexString) }),
        ])
    }

    /// `scheme://host[:port]` of a URL, for status lines (the tunnel path is not for people).
    public static func host(of url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            let host = components.host
        else { return url }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}
