import Hybrid
import Proximity
import Testing
import WebAuthnClient

@testable import TerminalIO

/// The browser's phone sessions as the person follows them on standard error.
struct ClientLinesTests {
    static let radio = ProximityMode.simulated(host: "127.0.0.1", port: 9)

    @Test func aQRSessionSaysEachStepAndNothingOfALinkedOne() throws {
        let routingID = try RoutingID(bytes: [0xAB, 0xCD, 0xEF])
        #expect(
            ClientLines.qrSession(.showQRCode(url: "FIDO:/1"), radio: Self.radio)
                == "waiting for a phone to scan the QR code and come near (Bluetooth: \(Self.radio))")
        #expect(
            ClientLines.qrSession(.advertSeen(routingID: routingID, domain: try TunnelDomain(id: 1)), radio: Self.radio)
                == "advert seen: the phone is near; relay cable.auth.com, routing ID \(routingID)")
        #expect(
            ClientLines.qrSession(
                .tunnelConnected(url: "wss://cable.auth.com/cable/connect/ABCDEF/00"), radio: Self.radio)
                == "tunnel connected: wss://cable.auth.com")
        #expect(ClientLines.qrSession(.requestSent(command: 0x02), radio: Self.radio) == "request sent: getAssertion")
        #expect(ClientLines.qrSession(.responseReceived(status: 0), radio: Self.radio) == "answer received")
        #expect(
            ClientLines.qrSession(.responseReceived(status: 0x2E), radio: Self.radio)
                == "answer received (CTAP status 0x2e)")
        #expect(ClientLines.qrSession(.linkedPhoneNear, radio: Self.radio) == nil)
    }

    /// The phone's name is its own choice: escaped.
    @Test func aLinkedSessionNamesThePhoneEscaped() {
        #expect(
            ClientLines.linkedSession(
                .contacting(url: "wss://relay.example/cable/contact/AAAA"), phone: "Pixel\u{1B}[2K", radio: Self.radio)
                == "asking the relay wss://relay.example to wake the phone \"Pixel\\u{1B}[2K\" (Bluetooth: \(Self.radio))"
        )
        #expect(
            ClientLines.linkedSession(.linkedPhoneNear, phone: "Pixel", radio: Self.radio)
                == "the phone is near: handshake")
        #expect(ClientLines.linkedSession(.showQRCode(url: "FIDO:/1"), phone: "Pixel", radio: Self.radio) == nil)
        #expect(
            ClientLines.linkedSession(.handshakeDone, phone: "Pixel", radio: Self.radio)
                == "handshake done: end-to-end encrypted")
    }

    /// A chooser nobody could answer is said as that (issue 24: "client create with no terminal prints a chooser,
    /// then 'the user cancelled'"); with a terminal, the person cancelled.
    @Test func aFailureIsOneLineAndNoTerminalIsNotACancel() {
        let cancelled = ClientError(.userCancelled)
        #expect(
            ClientLines.failure(cancelled, nobodyAnswered: true)
                == "passkey: NotAllowedError: there is no terminal to choose an authenticator on "
                + "(run it in a terminal, or name one with --hint or --no-phone)\n")
        #expect(
            ClientLines.failure(cancelled, nobodyAnswered: false) == "passkey: NotAllowedError: the user cancelled\n")
        #expect(
            ClientLines.failure(ClientError(.malformedJSON(offset: 3, expected: "a value\u{1B}")), nobodyAnswered: true)
                == "passkey: SyntaxError: the options are not JSON: expected a value\\u{1b} at byte 3\n")
    }
}
