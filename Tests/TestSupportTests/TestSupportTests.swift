import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The shared helpers themselves: the sequences tests pinned seeds against, the runner's time limit and pipes, the
/// WebSocket wire format.
struct SeededRandomTests {
    /// SplitMix64's published sequence for seed 1234567: every test target's seeded cases depend on it.
    @Test func theSequenceIsSplitMix64() {
        var random = SeededRandom(seed: 1_234_567)
        #expect(
            (0..<5).map { _ in random.next() } == [
                6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423,
                4_593_380_528_125_082_431, 16_408_922_859_458_223_821,
            ])
    }

    @Test func bytesTakeEightPerDrawLeastSignificantFirst() {
        var words = SeededRandom(seed: 7)
        let first = words.next()
        let second = words.next()
        var random = SeededRandom(seed: 7)
        let expected =
            (0..<8).map { UInt8(truncatingIfNeeded: first >> (8 * $0)) }
            + (0..<3).map { UInt8(truncatingIfNeeded: second >> (8 * $0)) }
        #expect(random.bytes(11) == expected)
        #expect(random.state == words.state)
    }

    @Test func seededBytesRepeatPerSeed() {
        #expect(SeededBytes(seed: 5)(40) == SeededBytes(seed: 5)(40))
        #expect(SeededBytes(seed: 5)(40) != SeededBytes(seed: 6)(40))
        var random = SeededRandom(seed: 5)
        let shared = SeededBytes(seed: 5)
        #expect(shared.bytes(3) + shared.bytes(3) == random.bytes(3) + random.bytes(3))
    }

    @Test func mutationsReplayPerSeed() {
        var first = SeededRandom(seed: 9)
        var second = SeededRandom(seed: 9)
        let input = Array("a valid input".utf8)
        let mutations = (0..<200).map { _ in first.mutate(input) }
        #expect(mutations == (0..<200).map { _ in second.mutate(input) })
        #expect(mutations.contains { $0 != input })
    }
}

struct ChildProcessTests {
    @Test func stdinArgumentsAndEnvironmentReachTheChild() async throws {
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "cat; echo \"$1 $GREETING\" >&2", "sh", "world"], environment: ["GREETING": "hello"],
            input: Array("piped\n".utf8))
        #expect(result.termination.exitStatus == 0 && !result.termination.timedOut)
        #expect(result.stdout == "piped\n")
        #expect(result.stderr == "world hello\n")
    }

    @Test func theExitStatusAndSignalAreReported() async throws {
        #expect(try await ChildProcess.run("/bin/sh", ["-c", "exit 3"]).termination.exitStatus == 3)
        let killed = try await ChildProcess.run("/bin/sh", ["-c", "kill -9 $$"]).termination
        #expect(killed.signaled && killed.status == SIGKILL && killed.exitStatus == nil && !killed.timedOut)
    }

    @Test func aChildPastItsTimeLimitIsKilled() async throws {
        let start = ContinuousClock.now
        // Long enough that only the kill can end it: a timer that fired late still shows as SIGKILL, not as an exit.
        let result = try await ChildProcess.run("/bin/sleep", ["600"], timeout: .milliseconds(200))
        #expect(result.termination.timedOut && result.termination.signaled && result.termination.status == SIGKILL)
        #expect(ContinuousClock.now - start < .seconds(300))
    }

    @Test func linesAreAwaitedAndMatched() async throws {
        let child = try ChildProcess("/bin/sh", ["-c", "echo one; echo two >&2; echo three; read line"])
        #expect(await child.stdoutLine(timeout: .seconds(30)) { $0.hasPrefix("th") } == "three")
        #expect(await child.stderrLine(timeout: .seconds(30)) == "two")
        // Standard input is /dev/null: `read` ends at once, and so does standard output.
        #expect(await child.wait().exitStatus == 1)
        #expect(await child.stdoutLine(timeout: .seconds(30)) { $0 == "four" } == nil)
        #expect(child.output == "one\nthree\n")
    }

    @Test func aLineThatNeverComesTimesOut() async throws {
        let child = try ChildProcess("/bin/sleep", ["600"])  // only the SIGTERM can end it before wait's own limit
        #expect(await child.stdoutLine(timeout: .milliseconds(100)) == nil)
        child.stop()
        let termination = await child.wait()
        #expect(termination.signaled && termination.status == SIGTERM)
    }
}

struct TemporaryDirectoryTests {
    @Test func filesAreOwnerOnlyAndGoWithTheDirectory() throws {
        let directory = try TemporaryDirectory(prefix: "support-tests")
        let path = try directory.write([1, 2, 3], to: "file")
        #expect(FileManager.default.contents(atPath: path) == Data([1, 2, 3]))
        #expect(directory.listing() == ["file"])
        var status = stat()
        #expect(stat(directory.path, &status) == 0 && status.st_mode & 0o777 == 0o700)
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        directory.remove()
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }
}

struct RawFrameTests {
    @Test(arguments: [0, 1, 125, 126, 65535, 65536])
    func framesRoundTripAtEveryLengthEncoding(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for masked in [false, true] {
            let bytes = RawFrame.bytes(opcode: 0x2, payload, fin: false, masked: masked)
            var rest = (bytes + [0x88])[...]
            #expect(RawFrame.parse(&rest) == RawFrame(fin: false, opcode: 0x2, masked: masked, payload: payload))
            #expect(Array(rest) == [0x88])
            #expect(RawFrame.parse(&rest) == nil, "a partial header is not a frame")
            var partial = bytes.dropLast()[...]
            #expect(RawFrame.parse(&partial) == nil)
        }
    }

    @Test func clientFramesAreMaskedAndServerFramesAreNot() {
        #expect(RawFrame.server(opcode: 0x8, [0x03, 0xE8]) == [0x88, 0x02, 0x03, 0xE8])
        let key = RawFrame.maskingKey
        let masked: [UInt8] = [1 ^ key[0], 2 ^ key[1], 3 ^ key[2], 4 ^ key[3], 5 ^ key[0]]
        #expect(RawFrame.client(opcode: 0x2, [1, 2, 3, 4, 5], rsv: 0x4) == [0xC2, 0x85] + key + masked)
        #expect(key == [0x37, 0xFA, 0x21, 0x3D])
        #expect(RawFrame.frames(in: RawFrame.server(opcode: 0x8, [0x03, 0xE8])).first?.closeCode == 1000)
    }

    @Test func responsesAndUpgradeRequestsAreWrittenAndReadByHand() {
        var bytes = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nX-A:  b \r\n\r\n".utf8)[...]
        let response = RawResponse.parse(&bytes)
        #expect(response?.status == 101 && response?.header("upgrade") == "websocket" && response?.header("x-a") == "b")
        #expect(bytes.isEmpty)
        var withBody = Array("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnot".utf8)[...]
        #expect(RawResponse.parse(&withBody) == nil, "the body is not all there")
        #expect(
            WebSocketUpgrade.request(path: "/p", protocols: nil, version: nil, extra: "X: y\r\n")
                == "GET /p HTTP/1.1\r\nHost: relay.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX: y\r\n\r\n")
    }
}
