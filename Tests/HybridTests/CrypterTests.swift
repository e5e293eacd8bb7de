import Basics
import CBOR
import Crypto
import Testing

@testable import Hybrid

/// The transport crypter: upstream and Python known answers, the legacy construction, padding and every failure.
struct CrypterTests {
    static func crypter(read: [UInt8], write: [UInt8]) throws -> Crypter {
        try Crypter(readKey: SymmetricKey(data: read), writeKey: SymmetricKey(data: write))
    }

    static let otherKey = [UInt8](repeating: 0x11, count: 32)

    /// hybrid.json `crypter`: webauthn-rs `encrypt_decrypt_expected`, sequence numbers 0 and 1.
    @Test func sharedVectors() throws {
        let entries = try #require(try HybridVectors.section("crypter") as? [[String: Any]], "crypter entries")
        try #require(!entries.isEmpty, "section crypter is empty")
        for entry in entries {
            #expect(entry["construction"] as? String == "new")
            let key = try entry.hex("write_key")
            let plaintext = Array(try #require(entry["plaintext_utf8"] as? String).utf8)
            let expected = try entry.hexList("ciphertexts")
            var sender = try Self.crypter(read: Self.otherKey, write: key)
            var receiver = try Self.crypter(read: key, write: Self.otherKey)
            for ciphertext in expected {
                #expect(try sender.encrypt(plaintext) == ciphertext)
                #expect(ciphertext.count == 64 + 16)
                #expect(try receiver.decrypt(ciphertext) == plaintext)
            }
            #expect(receiver.readConstruction == .current)
        }
    }

    /// Keys leaked from a patched Chromium (copied into the Python file from webauthn-rs `construction`).
    @Test func chromiumLeakedKeys() throws {
        let vector = try NoiseVectors.crypter().object("chromium_construction")
        let plaintext = try vector.hex("plaintext")
        var chromium = try Self.crypter(read: try vector.hex("read_key"), write: try vector.hex("write_key"))
        #expect(try chromium.encrypt(plaintext) == (try vector.hex("ciphertext")))
        var peer = try Self.crypter(read: try vector.hex("write_key"), write: try vector.hex("read_key"))
        #expect(try peer.decrypt(try vector.hex("ciphertext")) == plaintext)
        // The plaintext is a revision-1 CTAP frame: type 1, makeCredential.
        let frame = try TunnelFrame(plaintext: plaintext, revision: .one)
        #expect(frame.type == .ctap && frame.payload.first == 0x01)
    }

    /// A peer that still sends the old construction is understood, and the choice then holds for the session.
    @Test func legacyConstructionIsAcceptedAndKept() throws {
        let vectors = try NoiseVectors.crypter()
        let key = try vectors.hex("key")
        let plaintexts = try vectors.hexList("plaintexts")
        let legacy = try vectors.object("legacy_session")
        let ciphertexts = try legacy.hexList("ciphertexts")
        try #require(ciphertexts.count == plaintexts.count && plaintexts.count >= 3)

        var all = try Self.crypter(read: key, write: Self.otherKey)
        #expect(all.readConstruction == nil)
        for (ciphertext, plaintext) in zip(ciphertexts, plaintexts) {
            #expect(try all.decrypt(ciphertext) == plaintext)
            #expect(all.readConstruction == .legacy)
        }

        // After two legacy messages, a current-construction message at sequence 2 is refused.
        var fixed = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try fixed.decrypt(ciphertexts[0]) == plaintexts[0])
        #expect(try fixed.decrypt(ciphertexts[1]) == plaintexts[1])
        #expect(throws: CrypterError.authenticationFailed) {
            try fixed.decrypt(try legacy.hex("current_at_sequence_2"))
        }

        // Sending stays on the current construction after a legacy peer was detected.
        var echo = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try echo.decrypt(ciphertexts[0]) == plaintexts[0])
        let sent = try echo.encrypt(plaintexts[1])
        var reader = try Self.crypter(read: Self.otherKey, write: key)
        #expect(try reader.decrypt(sent) == plaintexts[1])
        #expect(reader.readConstruction == .current)
    }

    /// A session that started with the current construction refuses a legacy message later.
    @Test func currentConstructionIsKept() throws {
        let vectors = try NoiseVectors.crypter()
        let key = try vectors.hex("key")
        let plaintexts = try vectors.hexList("plaintexts")
        let session = try vectors.object("current_session")
        let ciphertexts = try session.hexList("ciphertexts")

        var all = try Self.crypter(read: key, write: Self.otherKey)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        for (ciphertext, plaintext) in zip(ciphertexts, plaintexts) {
            #expect(try sender.encrypt(plaintext) == ciphertext)
            #expect(try all.decrypt(ciphertext) == plaintext)
        }
        #expect(all.readConstruction == .current)

        var fixed = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try fixed.decrypt(ciphertexts[0]) == plaintexts[0])
        #expect(throws: CrypterError.authenticationFailed) {
            try fixed.decrypt(try session.hex("legacy_at_sequence_1"))
        }
    }

    /// Padding blocks sealed by the Python script: what Chromium accepts (unaligned, non-zero padding) and what it
    /// refuses (`p + 1 > count`).
    @Test func paddingKnownAnswers() throws {
        let vectors = try NoiseVectors.crypter()
        let key = try vectors.hex("key")
        let cases = try #require(vectors["padding"] as? [[String: Any]])
        try #require(!cases.isEmpty)
        var refused = 0
        for entry in cases {
            var crypter = try Self.crypter(read: key, write: Self.otherKey)
            let ciphertext = try entry.hex("ciphertext")
            if entry["plaintext"] is String {
                #expect(try crypter.decrypt(ciphertext) == (try entry.hex("plaintext")))
            } else {
                refused += 1
                #expect(throws: CrypterError.invalidPadding) { try crypter.decrypt(ciphertext) }
                let failed = crypter.hasFailed
                #expect(failed)
            }
        }
        #expect(refused >= 2)
    }

    @Test func paddedLengths() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        var receiver = try Self.crypter(read: key, write: Self.otherKey)
        for count in 0..<300 {
            let message = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let padded = Crypter.pad(message)
            #expect(padded.count % 32 == 0 && padded.count > count && padded.count - count <= 32)
            #expect(padded.last == UInt8(padded.count - count - 1))
            #expect(padded[count..<(padded.count - 1)].allSatisfy { $0 == 0 })
            let ciphertext = try sender.encrypt(message)
            #expect(ciphertext.count == padded.count + 16)
            #expect(try receiver.decrypt(ciphertext) == message)
        }
    }

    @Test func tamperedCiphertextsAreRefused() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        let ciphertext = try sender.encrypt(Array("tamper with me".utf8))
        for bit in 0..<(ciphertext.count * 8) {
            var receiver = try Self.crypter(read: key, write: Self.otherKey)
            #expect(throws: CrypterError.authenticationFailed) { try receiver.decrypt(flipping(ciphertext, bit: bit)) }
        }
        var receiver = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try receiver.decrypt(ciphertext) == Array("tamper with me".utf8))
    }

    @Test func wrongKeyIsRefused() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        let ciphertext = try sender.encrypt([1, 2, 3])
        var wrong = try Self.crypter(read: Self.otherKey, write: key)
        #expect(throws: CrypterError.authenticationFailed) { try wrong.decrypt(ciphertext) }
    }

    /// Replayed, reordered and dropped messages carry the wrong sequence number.
    @Test func sequenceNumbersMustMatch() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        let first = try sender.encrypt([1])
        let second = try sender.encrypt([2])
        let third = try sender.encrypt([3])

        var replay = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try replay.decrypt(first) == [1])
        #expect(throws: CrypterError.authenticationFailed) { try replay.decrypt(first) }

        var reordered = try Self.crypter(read: key, write: Self.otherKey)
        #expect(throws: CrypterError.authenticationFailed) { try reordered.decrypt(second) }

        var dropped = try Self.crypter(read: key, write: Self.otherKey)
        #expect(try dropped.decrypt(first) == [1])
        #expect(throws: CrypterError.authenticationFailed) { try dropped.decrypt(third) }
    }

    @Test func truncatedCiphertextsAreRefused() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        let ciphertext = try sender.encrypt(Array("truncate".utf8))
        for count in 0...16 {
            var receiver = try Self.crypter(read: key, write: Self.otherKey)
            #expect(throws: CrypterError.truncated(count)) { try receiver.decrypt(Array(ciphertext.prefix(count))) }
        }
        for count in 17..<ciphertext.count {
            var receiver = try Self.crypter(read: key, write: Self.otherKey)
            #expect(throws: CrypterError.authenticationFailed) {
                try receiver.decrypt(Array(ciphertext.prefix(count)))
            }
        }
    }

    /// Chromium stops once a sequence number would pass 2²⁴ − 1; message 2²⁴ − 1 itself still goes through.
    @Test func sequenceNumbersRunOut() throws {
        let key = SymmetricKey(data: [UInt8](repeating: 0x42, count: 32))
        let other = SymmetricKey(data: Self.otherKey)
        let last = Crypter.maximumSequenceNumber
        #expect(last == 16_777_215)
        var sender = Crypter(readKey: other, writeKey: key, readSequenceNumber: 0, writeSequenceNumber: last)
        var receiver = Crypter(readKey: key, writeKey: other, readSequenceNumber: last, writeSequenceNumber: 0)
        let ciphertext = try sender.encrypt([9])
        #expect(try receiver.decrypt(ciphertext) == [9])
        #expect(sender.writeSequenceNumber == last + 1)
        #expect(throws: CrypterError.sequenceNumberExhausted) { try sender.encrypt([9]) }
        #expect(throws: CrypterError.sessionFailed) { try sender.encrypt([9]) }
        #expect(throws: CrypterError.sequenceNumberExhausted) { try receiver.decrypt(ciphertext) }
        #expect(throws: CrypterError.sessionFailed) { try receiver.decrypt(ciphertext) }

        // The nonce of sequence number n is 0⁸ ‖ n big-endian (current) and n little-endian ‖ 0⁸ (legacy).
        #expect(Crypter.nonceAndAAD(0x0102_0304, .current).nonce == [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4])
        #expect(Crypter.nonceAndAAD(0x0102_0304, .current).aad == [])
        #expect(Crypter.nonceAndAAD(0x0102_0304, .legacy).nonce == [4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(Crypter.nonceAndAAD(0x0102_0304, .legacy).aad == [2])
    }

    /// After any error the crypter refuses both directions, even a message that would otherwise be valid.
    @Test func failureEndsTheSession() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        var sender = try Self.crypter(read: Self.otherKey, write: key)
        let good = try sender.encrypt([1, 2, 3])
        var receiver = try Self.crypter(read: key, write: Self.otherKey)
        #expect(throws: CrypterError.truncated(3)) { try receiver.decrypt([1, 2, 3]) }
        let failed = receiver.hasFailed
        #expect(failed)
        #expect(throws: CrypterError.sessionFailed) { try receiver.decrypt(good) }
        #expect(throws: CrypterError.sessionFailed) { try receiver.encrypt([1]) }
        #expect(receiver.readSequenceNumber == 0 && receiver.writeSequenceNumber == 0)
    }

    @Test func keysMustBe32Bytes() throws {
        for count in [0, 16, 24, 31, 33, 64] {
            let bad = SymmetricKey(data: [UInt8](repeating: 1, count: count))
            let good = SymmetricKey(data: Self.otherKey)
            #expect(throws: CrypterError.wrongKeySize(count)) { _ = try Crypter(readKey: bad, writeKey: good) }
            #expect(throws: CrypterError.wrongKeySize(count)) { _ = try Crypter(readKey: good, writeKey: bad) }
        }
    }

    @Test func errorDescriptionsHoldNoKeys() {
        let errors: [CrypterError] = [
            .wrongKeySize(3), .truncated(4), .authenticationFailed, .invalidPadding, .sequenceNumberExhausted,
            .sessionFailed,
        ]
        for error in errors {
            #expect(!String(describing: error).contains(Self.otherKey.hexString))
            #expect(String(describing: error).hasPrefix("caBLE"))
        }
    }
}
