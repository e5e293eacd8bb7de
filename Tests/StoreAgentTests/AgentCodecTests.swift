import StoreAgent
import Testing

/// The agent's wire format: every message round-trips, and anything else is refused, never guessed at.
struct AgentCodecTests {
    static let requests: [AgentRequest] = [
        .unlock(store: "/home/a/passkeys.sqlite", passphrase: Array("correct horse".utf8), idle: .seconds(900)),
        .lock(store: nil),
        .lock(store: "/s"),
        .status(store: "/s"),
        .seal(store: "/s", use: 1, aad: [1, 2, 3], bytes: Array(repeating: 7, count: 300)),
        .open(store: "/s", use: 3, aad: [], bytes: [9]),
        .authenticate(store: "/s", use: 2, bytes: [0, 0, 0]),
    ]

    static let replies: [AgentReply] = [
        .done, .held(idle: .seconds(61), sinceUnlock: .seconds(42)), .held(idle: .seconds(61), sinceUnlock: nil),
        .notHeld, .bytes([]), .bytes([1, 2]), .doesNotOpen, .wrongPassphrase,
        .refused("no"),
    ]

    @Test func everyMessageRoundTrips() throws {
        for request in Self.requests {
            #expect(try AgentCodec.decodeRequest(AgentCodec.encode(request)) == request)
        }
        for reply in Self.replies {
            #expect(try AgentCodec.decodeReply(AgentCodec.encode(reply)) == reply)
        }
    }

    @Test func malformedRequestsAreRefused() throws {
        let good = AgentCodec.encode(AgentRequest.status(store: "/s"))
        var wrongVersion = good
        wrongVersion[0] = 2
        var unknownTag = good
        unknownTag[1] = 99
        let trailing = good + [0]
        let extraField = good + [0, 0, 0, 0]
        let truncated = Array(good.dropLast())
        let relative = AgentCodec.encode(AgentRequest.status(store: "relative/path"))
        let withNUL = AgentCodec.encode(AgentRequest.status(store: "/a\u{0}b"))
        var notUTF8 = AgentCodec.encode(AgentRequest.status(store: "/ab"))
        notUTF8[notUTF8.count - 1] = 0xFF
        let longUse = [AgentCodec.version, 4] + field(Array("/s".utf8)) + field([1, 1]) + field([]) + field([])
        let emptyPassphrase = [AgentCodec.version, 1] + field(Array("/s".utf8)) + field([]) + field([0, 0, 0, 9])
        let shortDuration = [AgentCodec.version, 1] + field(Array("/s".utf8)) + field([1]) + field([0, 9])
        for bad in [
            [], [1], wrongVersion, unknownTag, trailing, extraField, truncated, relative, withNUL, notUTF8, longUse,
            emptyPassphrase, shortDuration,
        ] {
            #expect(throws: AgentCodecError.self) { try AgentCodec.decodeRequest(bad) }
        }
    }

    @Test func oversizeFramesAreRefusedFromTheirHeader() throws {
        #expect(try AgentCodec.frameLength([0, 0x10, 0, 0]) == AgentCodec.maximumFrame)
        #expect(throws: AgentCodecError.self) { try AgentCodec.frameLength([0, 0x10, 0, 1]) }
        #expect(throws: AgentCodecError.self) { try AgentCodec.frameLength([0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: AgentCodecError.self) { try AgentCodec.frameLength([0, 0, 1]) }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0..<64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty { bytes[0] = AgentCodec.version }
            _ = try? AgentCodec.decodeRequest(bytes)
            _ = try? AgentCodec.decodeReply(bytes)
        }
    }

    private func field(_ bytes: [UInt8]) -> [UInt8] {
        let count = UInt32(bytes.count)
        return [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + bytes
    }
}

/// When the agent forgets a key, with time passed in.
struct HeldKeysTests {
    @Test func theTimeSinceUnlockIsNotRenewedByUseAndStartsAgainWithAnUnlock() {
        var keys = HeldKeys<Int>()
        #expect(keys.sinceUnlock("/s", now: .zero) == nil)
        _ = keys.hold(1, for: "/s", idle: .seconds(600), now: .seconds(10))
        #expect(keys.sinceUnlock("/s", now: .seconds(10)) == .zero)
        #expect(keys.use("/s", now: .seconds(100)) == 1)
        #expect(keys.sinceUnlock("/s", now: .seconds(130)) == .seconds(120))
        _ = keys.hold(2, for: "/s", idle: .seconds(600), now: .seconds(200))
        #expect(keys.sinceUnlock("/s", now: .seconds(230)) == .seconds(30))
        // Past its time the key is not held, whatever the sweep has done yet.
        #expect(keys.sinceUnlock("/s", now: .seconds(800)) == nil)
        _ = keys.forget("/s")
        #expect(keys.sinceUnlock("/s", now: .seconds(230)) == nil)
    }

    @Test func anEarlierAgentsHeldReplyWithoutTheUnlockTimeIsRead() throws {
        // version 1, tag held (2), one 4-byte field: 61 s.
        #expect(
            try AgentCodec.decodeReply([1, 2, 0, 0, 0, 4, 0, 0, 0, 61]) == .held(idle: .seconds(61), sinceUnlock: nil))
        #expect(throws: AgentCodecError.self) { try AgentCodec.decodeReply([1, 2]) }
        #expect(throws: AgentCodecError.self) {
            try AgentCodec.decodeReply([1, 2, 0, 0, 0, 4, 0, 0, 0, 61, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1])
        }
        #expect(throws: AgentCodecError.self) {
            try AgentCodec.decodeReply([1, 2, 0, 0, 0, 4, 0, 0, 0, 61, 0, 0, 0, 1, 0])
        }
    }

    @Test func aKeyIsForgottenAfterItsIdleTimeWithoutUse() {
        var keys = HeldKeys<Int>()
        _ = keys.hold(1, for: "/s", idle: .seconds(60), now: .zero)
        #expect(keys.use("/s", now: .seconds(59)) == 1)
        // The use at 59 s moved the deadline to 119 s.
        #expect(keys.use("/s", now: .seconds(118)) == 1)
        #expect(keys.remaining("/s", now: .seconds(118)) == .seconds(60))
        #expect(keys.use("/s", now: .seconds(178)) == nil)
        #expect(keys.sweep(now: .seconds(178)) == [1])
        #expect(keys.isEmpty)
    }

    @Test func useNeverKeepsAKeyPastItsLifetime() {
        var keys = HeldKeys<Int>()
        _ = keys.hold(1, for: "/s", idle: .seconds(3600), now: .zero)
        var now = Duration.zero
        while now < HeldKeys<Int>.maximumLifetime - .seconds(1800) {
            now += .seconds(1800)
            #expect(keys.use("/s", now: now) == 1)
        }
        #expect(keys.use("/s", now: HeldKeys<Int>.maximumLifetime) == nil)
        #expect(keys.nextDeadline == HeldKeys<Int>.maximumLifetime)
    }

    @Test func lockForgetsOneStoreOrAll() {
        var keys = HeldKeys<Int>()
        _ = keys.hold(1, for: "/a", idle: .seconds(60), now: .zero)
        _ = keys.hold(2, for: "/b", idle: .seconds(60), now: .zero)
        #expect(keys.forget("/a") == [1])
        #expect(keys.use("/a", now: .seconds(1)) == nil)
        #expect(keys.use("/b", now: .seconds(1)) == 2)
        #expect(keys.forget(nil) == [2])
        #expect(keys.isEmpty)
    }

    @Test func unlockingAgainReplacesTheKeyAndClampsTheIdleTime() {
        var keys = HeldKeys<Int>()
        #expect(keys.hold(1, for: "/s", idle: .seconds(1), now: .zero) == nil)
        #expect(keys.remaining("/s", now: .zero) == HeldKeys<Int>.idleRange.lowerBound)
        #expect(keys.hold(2, for: "/s", idle: .seconds(999_999), now: .zero) == 1)
        #expect(keys.remaining("/s", now: .zero) == HeldKeys<Int>.idleRange.upperBound)
    }

    @Test func threeTriesThenGiveUp() {
        var tries = PassphraseTries()
        #expect(tries.left == 3)
        #expect(tries.wrong() == 2)
        #expect(tries.wrong() == 1)
        #expect(tries.wrong() == 0)
        #expect(tries.wrong() == 0)
    }
}

struct IdleDurationTests {
    @Test func unitsAndBounds() {
        #expect(parseIdleDuration("15m") == .seconds(900))
        #expect(parseIdleDuration("15") == .seconds(900))
        #expect(parseIdleDuration("90s") == .seconds(90))
        #expect(parseIdleDuration("2h") == .seconds(7200))
        #expect(parseIdleDuration("24h") == .seconds(86400))
        for bad in ["", "m", "5s", "25h", "1d", "-1m", "1.5h", "１m", "9999999s"] {
            #expect(parseIdleDuration(bad) == nil, "\(bad)")
        }
    }
}
