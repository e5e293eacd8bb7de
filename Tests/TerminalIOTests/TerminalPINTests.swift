import CTAP2
import Testing

@testable import TerminalIO

/// The browser's PIN for a security key: from the environment once, or asked on the terminal.
struct TerminalPINTests {
    /// `PASSKEY_CLIENT_PIN` is given once and never again after a wrong attempt, which counts against the key; an
    /// empty one is no PIN.
    @Test func theEnvironmentsPINIsGivenOnceAndNeverRetried() async {
        let source = SecurityKeyPIN.source(environment: ["PASSKEY_CLIENT_PIN": "1234"])
        #expect(await source(PINRequest(retriesLeft: 8)) == "1234")
        #expect(await source(PINRequest(retriesLeft: 7, previousAttemptWasWrong: true)) == nil)
        #expect(await SecurityKeyPIN.source(environment: ["PASSKEY_CLIENT_PIN": ""])(PINRequest()) == nil)
    }

    @Test func thePromptNamesTheKeyAndTheTriesLeft() {
        #expect(SecurityKeyPIN.prompt(for: PINRequest()) == "PIN for the security key: ")
        #expect(
            SecurityKeyPIN.prompt(for: PINRequest(key: "/dev/hidraw3", retriesLeft: 8))
                == "PIN for the security key /dev/hidraw3 (8 tries left): ")
        #expect(
            SecurityKeyPIN.prompt(
                for: PINRequest(key: "udp://h\u{1B}[2K", retriesLeft: 1, previousAttemptWasWrong: true))
                == "Wrong PIN. PIN for the security key udp://h\\u{1B}[2K (1 try left): ")
    }
}
