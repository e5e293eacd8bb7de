import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import Proximity
@testable import ProximityIO

/// The simulated scanner's datagram handler in an `EmbeddedChannel`: what reaches the callback, what does not, and
/// that nothing a peer sends ends the scan.
struct AdvertDatagramHandlerTests {
    final class Seen: Sendable {
        private let values = Mutex<[[UInt8]]>([])
        func append(_ bytes: [UInt8]) { values.withLock { $0.append(bytes) } }
        var all: [[UInt8]] { values.withLock { $0 } }
    }

    let channel = EmbeddedChannel()
    let seen = Seen()
    let callback = CallbackBox()
    let sender = try! SocketAddress(ipAddress: "127.0.0.1", port: 40_000)

    init() throws {
        let seen = seen
        callback.set { seen.append($0) }
        try channel.pipeline.syncOperations.addHandler(AdvertDatagramHandler(callback: callback))
        try channel.connect(to: sender).wait()  // active, as a bound socket is
    }

    func deliver(_ bytes: [UInt8]) throws {
        try channel.writeInbound(AddressedEnvelope(remoteAddress: sender, data: ByteBuffer(bytes: bytes)))
    }

    @Test func advertisementsUpTo31BytesReachTheCallbackInOrder() throws {
        try deliver([0x02, 0x01, 0x06])
        try deliver([])
        try deliver(Array(repeating: 0xAB, count: 31))
        #expect(seen.all == [[0x02, 0x01, 0x06], [], Array(repeating: 0xAB, count: 31)])
    }

    @Test func longerDatagramsAreNotAdvertisements() throws {
        try deliver(Array(repeating: 1, count: 32))
        try deliver(Array(repeating: 2, count: 65_507))
        #expect(seen.all.isEmpty)
        try deliver([7])
        #expect(seen.all == [[7]])
    }

    @Test func socketErrorsDoNotEndTheScan() throws {
        struct PortUnreachable: Error {}
        channel.pipeline.fireErrorCaught(PortUnreachable())
        #expect(channel.isActive)
        try deliver([9])
        #expect(seen.all == [[9]])
    }

    @Test func aClearedCallbackDropsWhatArrives() throws {
        try deliver([1])
        callback.set(nil)  // what stopScanning does
        try deliver([2])
        #expect(seen.all == [[1]])
    }
}
