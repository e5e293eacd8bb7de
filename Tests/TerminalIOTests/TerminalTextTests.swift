import Basics
import Foundation
import Hybrid
import PasskeyProvider
import Proximity
import Testing

@testable import TerminalIO

/// What the terminal shows of the roles' events (the escaping itself is Basics', `TerminalSafeTextTests`).
struct TerminalTextTests {
    @Test func statusLinesCarryTheTimeSinceTheStart() throws {
        let line = StatusLine.line("connecting", since: ContinuousClock.now - .milliseconds(1500))
        let match = try #require(line.wholeMatch(of: /\[ *(\d+\.\d{3}) s\] connecting\n/))
        let seconds = try #require(Double(match.1))
        #expect(seconds >= 1.5 && seconds < 60)
    }

    @Test func phoneStatusLinesNameTheRelayButNotTheTunnelPath() {
        #expect(PhoneLines.host(of: "wss://cable.example.com:8443/cable/new/0123") == "wss://cable.example.com:8443")
        #expect(PhoneLines.host(of: "not a url") == "not a url")
        #expect(
            PhoneLines.session(
                .connecting(url: "ws://127.0.0.1:9/cable/new/AA"), radio: .simulated(host: "127.0.0.1", port: 1),
                linked: false)
                == "connecting to the relay ws://127.0.0.1:9")
        #expect(
            PhoneLines.session(
                .connecting(url: "ws://127.0.0.1:9/cable/connect/AA"), radio: .simulated(host: "127.0.0.1", port: 1),
                linked: true)
                == "joining the computer's tunnel")
        #expect(PhoneLines.line(for: .done(answered: 1, listening: false)) == "done: answered 1 request")
        #expect(
            PhoneLines.line(for: .done(answered: 2, listening: true)) == "done: answered 2 requests; listening again")
    }
}
