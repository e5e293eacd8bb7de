import CTAP2
import CTAPHID
import CTAPHIDIO
import NIOCore
import Testing

/// The UDP server on a real socket: the happy path, closing, and the addresses it refuses. Everything else the datagram
/// handler does is tested without sockets in `CTAPHIDDatagramHandlerTests` and `CTAPHIDDatagramHandlerCBORTests`.
@Suite(.timeLimit(.minutes(1)))
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

    @Test func closingTheServerCancelsRunningRequests() async throws {
        let started = Gate()
        let cancelled = Gate()
        let server = try await CTAPHIDUDPServer.start(host: "127.0.0.1", port: 0) { _, _ in
            started.open()
            if !(await Gate().wait()) { cancelled.open() }
            return [0x2D]
        }
        let host = try await TestHost.connect(to: server)
        defer { Task { await host.close() } }
        let cid = try await host.initialize()
        try await host.send(cid, 0x10, [0x02])
        await started.wait()
        await server.close()
        try await server.run()  // Returns at once: the server is closed.
        #expect(await cancelled.wait(), "closing cancelled the running request")
    }

    @Test(arguments: ["0.0.0.0", "192.0.2.1", "::"])
    func refusesNonLoopbackAddresses(host: String) async throws {
        await #expect(throws: CTAPHIDUDPServerError.notLoopback(host)) {
            _ = try await CTAPHIDUDPServer.start(host: host, port: 0) { _, _ in [0x00] }
        }
    }
}
