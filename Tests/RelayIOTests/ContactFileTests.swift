import Basics
import Foundation
import Hybrid
import NIOPosix
import Relay
import Synchronization
import TestSupport
import Testing

@testable import RelayIO

/// The contact file and its journal: what they hold after each change, what survives a torn write, what a damaged
/// journal does, and that writing them holds up neither the event loops nor other tunnels (issue 23, attack 1).
struct ContactFileTests {
    static func record(_ byte: UInt8, lastUsed: Int64 = 1, routingID: String? = "0A0B0C") throws -> ContactRecord {
        ContactRecord(
            hash: .init(repeating: byte, count: 32), sealedVerifier: [byte, 1, 2], created: Int64(byte),
            lastUsed: lastUsed, proved: byte.isMultiple(of: 2) ? true : false,
            routingID: try routingID.map { try RoutingID(hex: $0) })
    }

    @Test func theJournalReplaysOverTheFileAndATornLastLineIsIgnored() throws {
        let directory = try TemporaryDirectory()
        let file = ContactFile(path: directory.file("contacts.json"))
        try file.replace(with: [try Self.record(1), try Self.record(2)])
        #expect(!FileManager.default.fileExists(atPath: file.journalPath))
        try file.append([.store(try Self.record(3)), .forget(hash: .init(repeating: 1, count: 32))])
        try file.append([.store(try Self.record(2, lastUsed: 9))])
        let loaded = try file.load()
        #expect(loaded.records == [try Self.record(2, lastUsed: 9), try Self.record(3)])
        #expect(loaded.journalEntries == 3)
        for path in [file.path, file.journalPath] {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path)")
        }
        // A write cut off by a crash leaves a line without its newline: it is not there.
        let handle = try #require(FileHandle(forWritingAtPath: file.journalPath))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"forget":"AQEB"#.utf8))
        try handle.close()
        #expect(try file.load().records == loaded.records)
        // Written whole, the journal goes.
        try file.replace(with: loaded.records)
        #expect(!FileManager.default.fileExists(atPath: file.journalPath))
        #expect(try file.load().records == loaded.records)
    }

    /// A damaged journal line or a malformed contact stops the relay from starting, with the file and line named,
    /// and changes nothing.
    @Test(arguments: [
        ("not JSON\n", "line 1, is not a journal entry"),
        (#"{"forget":"AQID"}"# + "\n", "line 1, holds a malformed contact"),
        (#"{"store":{"hash":"AQID","verifier":"","created":0,"lastUsed":0}}"# + "\n", "holds a malformed contact"),
        (#"{"forget":"\#(String(repeating: "A", count: 43))","store":null}"# + "\n{}\n", "line 2, is not a journal"),
    ])
    func aDamagedJournalIsRefusedAndLeftAsItIs(line: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let file = ContactFile(path: directory.file("contacts.json"))
        try file.replace(with: [try Self.record(1)])
        _ = try directory.write(Array(line.utf8), to: "contacts.json.journal")
        let before = try Data(contentsOf: URL(fileURLWithPath: file.journalPath))
        var configuration = RelayContactConfiguration()
        configuration.file = file.path
        let error = #expect(throws: ContactFileError.self) {
            _ = try RelayContacts.load(
                configuration: configuration, routingID: try RoutingID(hex: "0A0B0C"), routingIDIsConfigured: true,
                logger: LogCapture().logger)
        }
        #expect(error?.description.contains(message) == true, "\(error.map { "\($0)" } ?? "")")
        #expect(error?.description.contains(file.journalPath) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file.journalPath)) == before)
    }

    /// A file written before the journal and the routing IDs existed is read as it is.
    @Test func aFileFromEarlierRelaysIsRead() throws {
        let directory = try TemporaryDirectory()
        let hash = [UInt8](repeating: 7, count: 32).base64URLEncodedString
        let text = #"{"contacts":[{"created":5,"hash":"\#(hash)","lastUsed":6,"verifier":"AQI"}],"version":1}"#
        let path = try directory.write(Array(text.utf8), to: "contacts.json")
        let records = try ContactFile(path: path).load().records
        #expect(
            records == [
                ContactRecord(
                    hash: .init(repeating: 7, count: 32), sealedVerifier: [1, 2], created: 5, lastUsed: 6, proved: true,
                    routingID: nil)
            ])
    }

    /// Issue 23, attack 1: every registration rewrote the whole contact file on an event loop, inside a lock that
    /// every wake-channel event takes; with 1,700 contacts, unrelated tunnels waited a median of 1.2 s. Now the
    /// event loop only queues the change, and a writer thread appends it. Here the writer is held inside its write:
    /// a tunnel on the relay's only event loop still pairs and relays, and the phone is told "registered" only once
    /// the change is in the journal. (Before, the write ran on the event loop: with one thread, the pairing waited
    /// for it.)
    @Test func aStalledContactWriteHoldsUpNeitherTunnelsNorTheEventLoop() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("contacts.json")
        let release = DispatchSemaphore(value: 0)
        let observed = Mutex((writes: 0, onEventLoop: 0))
        let relay = try await Relay.start { configuration in
            configuration.threads = 1
            configuration.contacts.file = path
            configuration.contacts.writeHook = {
                let onEventLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
                observed.withLock {
                    $0.writes += 1
                    if onEventLoop { $0.onEventLoop += 1 }
                }
                _ = release.wait(timeout: .now() + 20)
            }
        }
        let (listener, response) = try await relay.request(WebSocketUpgrade.request(path: "/cable/listen"))
        #expect(response.status == 101)
        let challenge = try #require(try await listener.readFrame())
        guard case .challenge = try ListenerMessage(bytes: challenge.payload) else {
            Issue.record("the first message is not the challenge")
            return
        }
        let verifier = ContactOwnership.verifier(listenerSecret: .init(repeating: 0x5A, count: 32))
        try await listener.send(RawFrame.clientBinary(ListenerMessage.register(verifier: verifier).bytes))
        try await Relay.eventually("the writer to start") { observed.withLock { $0.writes } == 1 }

        // The write is stalled: a tunnel still pairs and relays, on the relay's one event loop.
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawFrame.clientBinary([1, 2, 3]))
        #expect(try await authenticator.readFrame()?.payload == [1, 2, 3])
        #expect(!FileManager.default.fileExists(atPath: path + ".journal"))

        release.signal()
        let answer = try #require(try await listener.readFrame())
        guard case .registered(let contactID) = try ListenerMessage(bytes: answer.payload) else {
            Issue.record("the answer is not the registration")
            return
        }
        // The answer went out after the change reached the journal.
        let journal = try String(contentsOfFile: path + ".journal", encoding: .utf8)
        #expect(journal.contains(ContactOwnership.hash(contactID: contactID).base64URLEncodedString))
        #expect(observed.withLock { $0.onEventLoop } == 0)
        await relay.server.shutdown()
        let kept = try ContactFile(path: path).load().records
        #expect(kept.map(\.hash) == [ContactOwnership.hash(contactID: contactID)])
        #expect(kept.first?.routingID == (try RoutingID(bytes: Array(contactID.prefix(3)))))
    }
}
