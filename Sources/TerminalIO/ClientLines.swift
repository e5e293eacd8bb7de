import Basics
import CTAP2
import Hybrid
import Proximity
import WebAuthnClient

/// The browser's phone sessions as status lines (`client create/get/register/sign-in`): a QR session from the code
/// to the answer, and a linked phone woken through its relay. Nil for a step the session does not show.
public enum ClientLines {
    /// The one line a failed ceremony prints: `passkey: Name: reason`. A chooser nobody could answer (no terminal,
    /// standard input at its end, no `--yes`: `TerminalClientInterface.nobodyAnswered`) is said as that, not as a
    /// person cancelling.
    public static func failure(_ error: ClientError, nobodyAnswered: Bool) -> String {
        if error.reason == .userCancelled, nobodyAnswered {
            return "passkey: \(error.name.rawValue): there is no terminal to choose an authenticator on "
                + "(run it in a terminal, or name one with --hint or --no-phone)\n"
        }
        return "passkey: \(error.description.terminalSafe)\n"
    }

    public static func qrSession(_ event: HybridClientProgress, radio: ProximityMode) -> String? {
        switch event {
        case .showQRCode: "waiting for a phone to scan the QR code and come near (Bluetooth: \(radio))"
        case .advertSeen(let routingID, let domain):
            "advert seen: the phone is near; relay \(domain.host), routing ID \(routingID)"
        case .tunnelConnected(let url): "tunnel connected: \(PhoneLines.host(of: url))"
        case .handshakeDone, .requestSent, .responseReceived: tunnelStep(event)
        case .contacting, .linkedPhoneNear: nil  // linked sessions only
        }
    }

    /// A linked session: `phone` is the name the person gave the phone, which it chose itself, so it is escaped.
    public static func linkedSession(_ event: HybridClientProgress, phone: String, radio: ProximityMode) -> String? {
        switch event {
        case .contacting(let url):
            "asking the relay \(PhoneLines.host(of: url)) to wake the phone \"\(phone.terminalSafe)\" (Bluetooth: \(radio))"
        case .tunnelConnected: "relay reached: waiting for the phone to come near"
        case .linkedPhoneNear: "the phone is near: handshake"
        case .handshakeDone, .requestSent, .responseReceived: tunnelStep(event)
        case .showQRCode, .advertSeen: nil  // QR sessions only
        }
    }

    /// The steps both sessions share once the tunnel is up.
    static func tunnelStep(_ event: HybridClientProgress) -> String? {
        switch event {
        case .handshakeDone: "handshake done: end-to-end encrypted"
        case .requestSent(let command): "request sent: \(CTAPCommand(rawValue: command).name)"
        case .responseReceived(let code):
            "answer received\(code == 0 ? "" : " (CTAP status 0x\(String(code, radix: 16)))")"
        default: nil
        }
    }
}
