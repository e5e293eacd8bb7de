import CTAP2
import CTAPHID
import CTAPHIDTransport
import NIOCore
import Testing

struct CTAPHIDUDPServerTests {
    @Test func initThenMultiPacketCBORRoundTrip() async throws {
        // 21 datagrams: generous timeouts, so that a loaded machine (one that starves the test's task for seconds)
        // does not turn this into a timing test. The timeouts have tests of their own.
        var configuration = CTAPHIDUDPServer.Configuration()
        configuration.protocolConfiguration.transactionTimeout = .seconds(5)
        configuration.protocolConfiguration.messageTimeout = .seconds(30)
        let received = Shared<[UInt8]>([])
        try await withServer(
            configuration: configuration,
            handler: { request, _ in
                received.set(request)
                return [0x00] + request.reversed() + request
            }
        ) { server in
            #expect(server.localAddress.port != 0)
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let cid = try await host.initialize()
            #expect(cid != 0 && cid != 0xFFFF_FFFF)

            let request = [0x01] + (0..<1200).map { UInt8(truncatingIfNeeded: $0 * 13) }
            try await host.send(cid, 0x10, request)
            let reply = try await host.receive(cid)
            #expect(received.get() == request)
            #expect(reply == HostMessage(command: 0x10, payload: [0x00] + request.reversed() + request))
        }
    }

    @Test func maximumPingIsEchoedByteForByte() async throws {
        // 130 datagrams: generous timeouts, so that a loaded machine does not turn this into a timing test.
        var configuration = CTAPHIDUDPServer.Configuration()
        configuration.protocolConfiguration.transactionTimeout = .seconds(5)
        configuration.protocolConfiguration.messageTimeout = .seconds(30)
        try await withServer(configuration: configuration, handler: { _, _ in [0] }) { server in
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let cid = try await host.initialize()
            let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let sent = hostReports(cid, 0x01, payload)
            for report in sent { try await host.send(datagram: report) }
            var echoed: [[UInt8]] = []
            for _ in sent { echoed.append(try #require(try await host.nextDatagram())) }
            #expect(echoed == sent)
        }
    }

    @Test func keepalivesReportUserPresenceWhileTheHandlerIsSlow() async throws {
        try await withServer(handler: { _, setStatus in
            setStatus(.userPresenceNeeded)
            try? await Task.sleep(for: .milliseconds(300))
            return [0x00, 0xA1, 0x01, 0x02]
        }) { server in
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let cid = try await host.initialize()
            try await host.send(cid, 0x10, [0x02])
            var keepalives: [UInt8] = []
            let reply = try await host.receive(cid, keepalives: &keepalives)
            #expect(reply == HostMessage(command: 0x10, payload: [0x00, 0xA1, 0x01, 0x02]))
            #expect(keepalives.count >= 2, "keepalives: \(keepalives)")
            #expect(keepalives.contains(2))
            #expect(keepalives.allSatisfy { $0 == 1 || $0 == 2 })
        }
    }

    @Test func cancelCancelsTheHandlerTask() async throws {
        let sawCancellation = Shared(false)
        try await withServer(handler: { _, setStatus in
            setStatus(.userPresenceNeeded)
            do {
                try await Task.sleep(for: .seconds(30))
                return [0x00]
            } catch {
                sawCancellation.set(true)
                return [CTAPError.keepaliveCancel.rawValue]
            }
        }) { server in
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let cid = try await host.initialize()
            let start = ContinuousClock.now
            try await host.send(cid, 0x10, [0x02])
            // Wait for a keepalive saying the user is needed, so the handler is surely waiting. On a busy machine
            // the server may first say PROCESSING (0x01), before the handler task has run.
            var keepalive = try #require(try await host.nextDatagram())
            while keepalive.count > 7, keepalive[7] == 0x01 { keepalive = try #require(try await host.nextDatagram()) }
            #expect(Array(keepalive.prefix(8)) == bigEndian(cid) + [0xBB, 0x00, 0x01, 0x02])
            try await host.send(cid, 0x11, [])
            let reply = try await host.receive(cid)
            #expect(reply == HostMessage(command: 0x10, payload: [0x2D]))
            #expect(sawCancellation.get())
            #expect(ContinuousClock.now - start < .seconds(10))
        }
    }

    @Test func wrongSizeDatagramsAreIgnored() async throws {
        try await withServer(handler: { _, _ in [0x00] }) { server in
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let initReport = hostReports(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])[0]
            for size in [0, 1, 63, 65, 128, 1000] {
                try await host.send(datagram: Array((initReport + Array(repeating: 0, count: 1000)).prefix(size)))
            }
            #expect(try await host.nextDatagram(timeout: .milliseconds(300)) == nil)
            let cid = try await host.initialize()
            try await host.send(cid, 0x10, [0x04])
            #expect(try await host.receive(cid) == HostMessage(command: 0x10, payload: [0x00]))
        }
    }

    @Test func twoClientsGetTheirOwnChannelsAndReplies() async throws {
        try await withServer(handler: { request, _ in
            try? await Task.sleep(for: .milliseconds(200))
            return [0x00] + request
        }) { server in
            let alice = try await TestHost.connect(to: server)
            let bob = try await TestHost.connect(to: server)
            defer {
                Task {
                    await alice.close(); await bob.close()
                }
            }
            let aliceChannel = try await alice.initialize()
            let bobChannel = try await bob.initialize()
            #expect(aliceChannel != bobChannel)

            // Alice's slow request makes the authenticator busy for Bob.
            try await alice.send(aliceChannel, 0x10, [0x01, 0xAA])
            try await bob.send(bobChannel, 0x01, [0x42])
            #expect(try await bob.receive(bobChannel) == HostMessage(command: 0x3F, payload: [0x06]))
            #expect(try await alice.receive(aliceChannel) == HostMessage(command: 0x10, payload: [0x00, 0x01, 0xAA]))

            try await bob.send(bobChannel, 0x10, [0x01, 0xBB])
            #expect(try await bob.receive(bobChannel) == HostMessage(command: 0x10, payload: [0x00, 0x01, 0xBB]))
            // Nothing of Bob's reached Alice.
            #expect(try await alice.nextDatagram(timeout: .milliseconds(200)) == nil)
        }
    }

    @Test func winkCallsTheWinkHandler() async throws {
        let winks = Shared(0)
        try await withServer(wink: { winks.set(winks.get() + 1) }, handler: { _, _ in [0x00] }) { server in
            let host = try await TestHost.connect(to: server)
            defer { Task { await host.close() } }
            let cid = try await host.initialize()
            try await host.send(cid, 0x08, [])
            #expect(try await host.receive(cid) == HostMessage(command: 0x08, payload: []))
            #expect(winks.get() == 1)
        }
    }

    @Test func closingTheServerCancelsRunningRequests() async throws {
        let started = Shared(false)
        let sawCancellation = Shared(false)
        let server = try await CTAPHIDUDPServer.start(host: "127.0.0.1", port: 0) { _, _ in
            started.set(true)
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                sawCancellation.set(true)
            }
            return [0x2D]
        }
        let host = try await TestHost.connect(to: server)
        defer { Task { await host.close() } }
        let cid = try await host.initialize()
        try await host.send(cid, 0x10, [0x02])
        let deadline = ContinuousClock.now + .seconds(5)
        while !started.get() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        await server.close()
        try await server.run()  // Returns at once: the server is closed.
        while !sawCancellation.get() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(sawCancellation.get())
    }

    @Test(arguments: ["0.0.0.0", "192.0.2.1", "::"])
    func refusesNonLoopbackAddresses(host: String) async throws {
        await #expect(throws: CTAPHIDUDPServerError.notLoopback(host)) {
            _ = try await CTAPHIDUDPServer.start(host: host, port: 0) { _, _ in [0x00] }
        }
    }
}

/// One socket must not deny the authenticator to another (issue 10).
struct CTAPHIDUDPHostilePeerTests {
    @Test func initsFromAnotherSocketDoNotEvictAClientsChannel() async throws {
        try await withServer(handler: { request, _ in [0x00] + request }) { server in
            let alice = try await TestHost.connect(to: server)
            let mallory = try await TestHost.connect(to: server)
            defer {
                Task {
                    await alice.close(); await mallory.close()
                }
            }
            let aliceChannel = try await alice.initialize()
            for _ in 0..<64 { _ = try await mallory.initialize() }
            try await alice.send(aliceChannel, 0x10, [0x01, 0xAA])
            #expect(try await alice.receive(aliceChannel) == HostMessage(command: 0x10, payload: [0x00, 0x01, 0xAA]))
        }
    }
}
