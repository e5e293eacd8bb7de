import Foundation
import HybridIO
import Synchronization
import TestSupport
import Testing
import WebSocketMessages

/// The tunnel client against a scripted, sometimes hostile, relay.
struct TunnelConnectionTests {
    typealias Script = ScriptedWebSocketServer.Script

    @discardableResult
    private func withServer<T>(
        _ script: Script, _ body: (ScriptedWebSocketServer) async throws -> T
    ) async throws -> T {
        let server = try await ScriptedWebSocketServer(script: script)
        do {
            let result = try await body(server)
            await server.close()
            return result
        } catch {
            await server.close()
            throw error
        }
    }

    @Test func upgradeReadsRoutingIDAndDeliversBinaryMessagesInOrder() async throws {
        var script = Script()
        script.extraHeaders = ["X-caBLE-Routing-ID: 0A0B0C"]
        script.afterUpgrade =
            RawFrame.server(opcode: 2, [1, 2, 3])
            + RawFrame.server(opcode: 9, [7])  // ping, answered with pong
            + RawFrame.server(opcode: 2, [4], fin: false)  // fragmented message
            + RawFrame.server(opcode: 0, [5], fin: false)
            + RawFrame.server(opcode: 0, [6], fin: true)
            + RawFrame.server(opcode: 2, Array(repeating: 9, count: 300))
        try await withServer(script) { server in
            let tunnel = try await TunnelConnection.connect(to: server.url + "/cable/new/00", timeout: .seconds(5))
            #expect(tunnel.routingIDHeader == "0A0B0C")
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == [1, 2, 3])
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == [4, 5, 6])
            #expect(
                try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == Array(repeating: 9, count: 300))
            try await tunnel.send([0xAA, 0xBB])
            await tunnel.close()
            // What the client sent after the upgrade: a masked pong, the masked binary message, a masked close.
            let frames = try await Self.framesUntilClose(from: server)
            try #require(frames.map(\.opcode) == [0xA, 0x2, 0x8])
            #expect(frames[0].payload == [7])
            #expect(frames[1].payload == [0xAA, 0xBB])
            #expect(frames[2].payload == [0x03, 0xE8])
        }
    }

    @Test func refusedUpgradeReportsTheStatus() async throws {
        for status in ["404 Not Found", "409 Conflict", "400 Bad Request"] {
            var script = Script()
            script.status = status
            try await withServer(script) { server in
                await #expect(throws: TunnelError.refused(status: Int(status.prefix(3))!)) {
                    _ = try await TunnelConnection.connect(to: server.url + "/cable/new/00", timeout: .seconds(5))
                }
            }
        }
    }

    @Test func upgradeWithoutTheFIDOSubprotocolIsRefused() async throws {
        for subprotocol in [nil, "chat"] as [String?] {
            var script = Script()
            script.subprotocol = subprotocol
            try await withServer(script) { server in
                await #expect(throws: TunnelError.badUpgrade(.subprotocolNotSelected)) {
                    _ = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
                }
            }
        }
    }

    @Test func upgradeFaultsReadAsBefore() {
        #expect(
            TunnelError.badUpgrade(.subprotocolNotSelected).description
                == "relay answered the upgrade wrongly: the server did not select subprotocol fido.cable")
        #expect(
            TunnelError.badUpgrade(.routingIDRepeated).description
                == "relay answered the upgrade wrongly: the server sent X-caBLE-Routing-ID twice")
        #expect(
            TunnelError.protocolViolation(.textFrame).description
                == "tunnel protocol violation: the relay sent a text frame")
        #expect(TunnelError.timedOut("waiting for the handshake").description == "timed out waiting for the handshake")
    }

    @Test func duplicateRoutingIDHeaderIsRefused() async throws {
        var script = Script()
        script.extraHeaders = ["X-caBLE-Routing-ID: 000001", "X-caBLE-Routing-ID: 000002"]
        try await withServer(script) { server in
            await #expect(throws: TunnelError.badUpgrade(.routingIDRepeated)) {
                _ = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
            }
        }
    }

    @Test func textFrameMaskedFrameAndOversizeMessageEndTheTunnelWithAnError() async throws {
        let hostile: [(String, [UInt8], WebSocketViolation)] = [
            ("text", RawFrame.server(opcode: 1, Array("hi".utf8)), .textFrame),
            ("masked", RawFrame.server(opcode: 2, [1], masked: true), .maskedFrame),
            (
                "oversize", RawFrame.server(opcode: 2, Array(repeating: 0, count: 70_000)),
                .messageTooLarge
            ),
            ("reserved opcode", [0x83, 0x00], .reservedOpcode(3)),
            (
                "continuation without start", RawFrame.server(opcode: 0, [1]),
                .continuationWithoutMessage
            ),
        ]
        for (name, bytes, violation) in hostile {
            var script = Script()
            script.afterUpgrade = bytes
            try await withServer(script) { server in
                let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
                do {
                    let message = try await tunnel.receive(timeout: .seconds(5), waitingFor: "test")
                    Issue.record("\(name): expected an error, got \(String(describing: message))")
                } catch let error as TunnelError {
                    switch error {
                    case .protocolViolation(violation): break
                    default: Issue.record("\(name): unexpected error \(error)")
                    }
                }
                await tunnel.close()
            }
        }
    }

    @Test func closeFromTheServerEndsReceivingCleanly() async throws {
        var script = Script()
        script.afterUpgrade =
            RawFrame.server(opcode: 2, [1])
            + RawFrame.server(opcode: 8, [0x03, 0xE8])
        try await withServer(script) { server in
            let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == [1])
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == nil)
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == nil)
        }
    }

    /// A relay that closes a tunnel with a wake-channel code right behind its 101 answer, in the same write (the
    /// computer's contact request that the phone declines at once): the code reaches the reader. (Had the relay also
    /// ended the stream in that write, NIO's HTTP decoder would drop the frame: the relay waits for the answer.)
    @Test func aCloseCodeRightBehindThe101IsReported() async throws {
        var script = Script()
        script.afterUpgrade = RawFrame.server(opcode: 8, [0x11, 0x3A])  // 4410
        try await withServer(script) { server in
            let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
            await #expect(throws: TunnelError.closedByRelay(code: 4410)) {
                try await tunnel.receive(timeout: .seconds(5), waitingFor: "test")
            }
        }
    }

    @Test func silentServerTimesOutWithTheGivenReason() async throws {
        try await withServer(Script()) { server in
            let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
            let started = ContinuousClock.now
            await #expect(throws: TunnelError.timedOut("waiting for the handshake")) {
                _ = try await tunnel.receive(timeout: .milliseconds(200), waitingFor: "waiting for the handshake")
            }
            #expect(ContinuousClock.now - started < .seconds(3))
            await tunnel.close()
        }
    }

    @Test func garbageInsteadOfHTTPFailsTheUpgrade() async throws {
        var script = Script()
        script.status = "101 Switching Protocols"
        script.subprotocol = nil
        // A server that answers with bytes that are not HTTP at all.
        let server = try await ScriptedWebSocketServer(
            script: Script(
                status: "\u{1}\u{2} nonsense", subprotocol: nil, afterUpgrade: [0xFF, 0, 1], closeAfter: true))
        await #expect(throws: (any Error).self) {
            _ = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
        }
        await server.close()
    }

    @Test func unreachableAndInvalidURLsGiveClearErrors() async throws {
        await #expect(throws: TunnelError.invalidURL("http://example.com/x")) {
            _ = try await TunnelConnection.connect(to: "http://example.com/x")
        }
        do {
            _ = try await TunnelConnection.connect(to: "ws://127.0.0.1:1/cable/new/00", timeout: .seconds(5))
            Issue.record("connected to port 1")
        } catch {
            guard case .unreachable(let host, let port, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(host == "127.0.0.1" && port == 1)
            #expect(error.description.hasPrefix("relay 127.0.0.1:1 unreachable"))
        }
    }

    // MARK: Helpers

    struct ClientFrame {
        var opcode: UInt8
        var payload: [UInt8]
    }

    /// Parses masked client frames; every client frame must be masked.
    static func parseClientFrames(_ bytes: [UInt8]) throws -> [ClientFrame] {
        try RawFrame.frames(in: bytes).map { frame in
            try #require(frame.masked, "client frames must be masked")
            return ClientFrame(opcode: frame.opcode, payload: frame.payload)
        }
    }
}

/// A peer that floods the tunnel client (issue 10): what it sends beyond the unread-message limit ends the
/// tunnel instead of growing the client's memory.
struct TunnelFloodTests {
    @Test func aPeerThatFloodsUnreadMessagesEndsTheTunnel() async throws {
        var script = ScriptedWebSocketServer.Script()
        script.afterUpgrade = (0..<200).flatMap { index in
            RawFrame.server(opcode: 2, [UInt8(truncatingIfNeeded: index)])
        }
        let server = try await ScriptedWebSocketServer(script: script)
        defer { Task { await server.close() } }
        let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
        // The client answers the flood with a close frame, 1008 (policy violation), before anything is read.
        let frames = try await TunnelConnectionTests.framesUntilClose(from: server)
        let close = try #require(frames.first { $0.opcode == 0x8 }, "the client never closed the flooded tunnel")
        #expect(close.payload == [0x03, 0xF0])
        // What was queued before the limit is still delivered, then the error.
        for index in 0..<TunnelConnection.maximumQueuedMessages {
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test") == [UInt8(index)])
        }
        await #expect(throws: TunnelError.tooManyUnreadMessages) {
            try await tunnel.receive(timeout: .seconds(5), waitingFor: "test")
        }
        await tunnel.close()
    }

    @Test func aLargeUnreadMessageCountsAgainstTheByteLimit() async throws {
        let size = TunnelConnection.maximumMessageBytes
        let fits = TunnelConnection.maximumQueuedBytes / size
        var script = ScriptedWebSocketServer.Script()
        script.afterUpgrade = (0...fits).flatMap { index in
            RawFrame.server(opcode: 2, Array(repeating: UInt8(index), count: size))
        }
        let server = try await ScriptedWebSocketServer(script: script)
        defer { Task { await server.close() } }
        let tunnel = try await TunnelConnection.connect(to: server.url + "/x", timeout: .seconds(5))
        let frames = try await TunnelConnectionTests.framesUntilClose(from: server)
        #expect(frames.first { $0.opcode == 0x8 }?.payload == [0x03, 0xF0])
        for index in 0..<fits {
            #expect(try await tunnel.receive(timeout: .seconds(5), waitingFor: "test")?.first == UInt8(index))
        }
        await #expect(throws: TunnelError.tooManyUnreadMessages) {
            try await tunnel.receive(timeout: .seconds(5), waitingFor: "test")
        }
        await tunnel.close()
    }
}

extension TunnelConnectionTests {
    /// The client's frames once it has sent a close frame (or the connection ended; at most 10 s).
    static func framesUntilClose(from server: ScriptedWebSocketServer) async throws -> [ClientFrame] {
        try await server.received.closeOrEnd()
        return try parseClientFrames(server.received.bytes.withLock { $0 })
    }
}
