import CBOR
import Crypto
import TestSupport
import Testing

@testable import Hybrid

/// Seeded random and mutated inputs for every parser of the Noise, Crypter and post-handshake layers: each input
/// ends in a typed error or a valid value, never a crash or a hang. Accepted values are checked too: a mutated
/// handshake message or ciphertext is accepted only if it equals the original, and accepted CBOR re-encodes to
/// something that parses to the same value.
struct HybridFuzzTests {
    static let iterations = 100_000
    /// Crypter inputs cost one or two AES-GCM opens each, slow in a debug build of BoringSSL: fewer of them.
    static let crypterIterations = 30_000

    /// Outcome counts by name, so that a test can insist that every kind of rejection was reached.
    struct Tally {
        var counts: [String: Int] = [:]
        mutating func record(_ outcome: some Any) { counts[String(describing: outcome), default: 0] += 1 }
        var total: Int { counts.values.reduce(0, +) }
    }

    // MARK: Mutations

    /// One mutation of `seed`: a bit flip, a byte change, an insertion, a deletion, a truncation, an extension, a
    /// spliced run of random bytes, or random bytes of random length.
    static func mutate(_ seed: [UInt8], using rng: inout SeededRandom) -> [UInt8] {
        var bytes = seed
        let rounds = Int.random(in: 1...3, using: &rng)
        for _ in 0..<rounds {
            switch Int.random(in: 0..<8, using: &rng) {
            case 0 where !bytes.isEmpty:
                bytes = flipping(bytes, bit: Int.random(in: 0..<(bytes.count * 8), using: &rng))
            case 1 where !bytes.isEmpty:
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 2:
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            case 3 where !bytes.isEmpty:
                bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
            case 4:
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            case 5:
                bytes += rng.bytes(Int.random(in: 1...8, using: &rng))
            case 6 where !bytes.isEmpty:
                let start = Int.random(in: 0..<bytes.count, using: &rng)
                let end = min(bytes.count, start + Int.random(in: 1...16, using: &rng))
                bytes.replaceSubrange(start..<end, with: rng.bytes(end - start))
            default:
                bytes = rng.bytes(Int.random(in: 0...(seed.count + 16), using: &rng))
            }
        }
        return bytes
    }

    /// Inputs for an 81-byte handshake message. Most are refused before ECDH: 40 % mutations of another length,
    /// 15 % random bytes, 43 % a changed point (not on the curve). 1.5 % keep the point and change only the tag,
    /// so they reach ECDH and DecryptAndHash; 0.5 % are the valid message.
    static func handshakeInput(_ valid: [UInt8], using rng: inout SeededRandom) -> [UInt8] {
        switch Int.random(in: 0..<200, using: &rng) {
        case 0..<80:
            let mutated = mutate(valid, using: &rng)
            return mutated.count == 81 ? Array(mutated.dropLast()) : mutated
        case 80..<110:
            return rng.bytes(Int.random(in: 0..<200, using: &rng))
        case 110..<196:
            var bytes = valid
            bytes[Int.random(in: 0..<65, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            return bytes
        case 196..<199:
            var bytes = valid
            bytes[Int.random(in: 65..<81, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            return bytes
        default:
            return valid
        }
    }

    // MARK: Handshake

    @Test(arguments: NoiseTests.Kind.allCases)
    func responderMessageOne(kind: NoiseTests.Kind) async throws {
        let statics = NoiseTests.Statics(kind: kind, staticKey: .init())
        let psk = [UInt8](repeating: 0x21, count: 32)
        let (valid, _) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init()).makeMessage()
        let ephemeral = P256.KeyAgreement.PrivateKey()
        var rng = SeededRandom(seed: kind == .qrInitiated ? 1 : 2)
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            if iteration % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let input = Self.handshakeInput(valid, using: &rng)
            do throws(NoiseError) {
                _ = try HandshakeResponder.respond(
                    to: input, kind: statics.responder, psk: psk, ephemeralKey: ephemeral)
                #expect(input == valid)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["accepted", default: 0] > 0)
        #expect(tally.counts["\(NoiseError.invalidPoint)", default: 0] > Self.iterations / 4)
        #expect(tally.counts["\(NoiseError.authenticationFailed)", default: 0] > 1000)
        #expect(
            tally.counts.keys.contains { $0.hasPrefix("Noise handshake message is") && $0.hasSuffix("expected 81") })
    }

    @Test(arguments: NoiseTests.Kind.allCases)
    func initiatorMessageTwo(kind: NoiseTests.Kind) async throws {
        let statics = NoiseTests.Statics(kind: kind, staticKey: .init())
        let psk = [UInt8](repeating: 0x22, count: 32)
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        let valid = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init()
        ).message
        var rng = SeededRandom(seed: kind == .qrInitiated ? 3 : 4)
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            if iteration % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let input = Self.handshakeInput(valid, using: &rng)
            let attempt = waiting  // the waiting state is consumed by each attempt; every input gets a copy
            do throws(NoiseError) {
                _ = try attempt.processResponse(input)
                #expect(input == valid)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["accepted", default: 0] > 0)
        #expect(tally.counts["\(NoiseError.invalidPoint)", default: 0] > Self.iterations / 4)
        #expect(tally.counts["\(NoiseError.authenticationFailed)", default: 0] > 1000)
    }

    // MARK: Crypter

    /// A third of the inputs go to a fresh crypter, which tries both constructions; a third to one in mid-session
    /// whose construction is already chosen; the rest are short or random and mostly refused before AES-GCM.
    @Test func crypterDecrypt() async throws {
        let key = SymmetricKey(data: [UInt8](repeating: 0x31, count: 32))
        let other = SymmetricKey(data: [UInt8](repeating: 0x32, count: 32))
        let plaintext = Array("fuzz the crypter".utf8)
        let seeds: [(ciphertext: [UInt8], construction: Crypter.Construction, sequenceNumber: UInt32)] = [
            (
                try Crypter.seal(Crypter.pad(plaintext), key: key, sequenceNumber: 0, construction: .current), .current,
                0
            ),
            (try Crypter.seal(Crypter.pad(plaintext), key: key, sequenceNumber: 0, construction: .legacy), .legacy, 0),
            (
                try Crypter.seal(Crypter.pad(plaintext), key: key, sequenceNumber: 7, construction: .current), .current,
                7
            ),
            (try Crypter.seal(Crypter.pad(plaintext), key: key, sequenceNumber: 7, construction: .legacy), .legacy, 7),
        ]
        var rng = SeededRandom(seed: 5)
        var tally = Tally()
        for index in 0..<Self.crypterIterations {
            if index % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let seed = seeds[index % seeds.count]
            let input: [UInt8] =
                switch Int.random(in: 0..<100, using: &rng) {
                case 0: seed.ciphertext
                case 1..<30: rng.bytes(Int.random(in: 0..<24, using: &rng))
                default: Self.mutate(seed.ciphertext, using: &rng)
                }
            var receiver = Crypter(
                readKey: key, writeKey: other, readSequenceNumber: seed.sequenceNumber, writeSequenceNumber: 0,
                readConstruction: seed.sequenceNumber == 0 ? nil : seed.construction)
            do throws(CrypterError) {
                let opened = try receiver.decrypt(input)
                #expect(input == seed.ciphertext && opened == plaintext)
                let construction = receiver.readConstruction
                #expect(construction == seed.construction)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.crypterIterations)
        #expect(tally.counts["accepted", default: 0] > 0)
        #expect(tally.counts["\(CrypterError.authenticationFailed)", default: 0] > Self.crypterIterations / 2)
        #expect(tally.counts.keys.contains { $0.contains("too short") })
    }

    // MARK: Post-handshake CBOR

    /// Seeds: the recorded Android and iOS messages, a Chromium-phone message with features and linking
    /// information, and their revision-0 forms (16-bit and the old 8-bit padding).
    static func postHandshakeSeeds() throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        let entries = try #require(
            try HybridVectors.section("post_handshake_plaintexts") as? [[String: Any]], "post_handshake_plaintexts")
        for entry in entries {
            seeds.append(try entry.hex("cbor"))
        }
        try #require(seeds.count >= 2)
        let linking = try LinkingTests.Session().linking(playServices: true)
        let chromium = PostHandshakeMessage(
            getInfo: seeds[0], linking: linking, features: [.ctap, .digitalCredentials])
        seeds.append(chromium.plaintext(revision: .one))
        for seed in Array(seeds) {
            let value = try CBORValue(decoding: seed)
            seeds.append(PaddedCBOR.encode(value))
            var old = value.encoded()
            let padded = (old.count + 1 + 255) / 256 * 256
            let extra = padded - old.count
            old += [UInt8](repeating: 0, count: extra)
            old[padded - 1] = UInt8(extra - 1)
            seeds.append(old)
        }
        return seeds
    }

    @Test func postHandshakeParse() async throws {
        let seeds = try Self.postHandshakeSeeds()
        var rng = SeededRandom(seed: 6)
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            if iteration % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let seed = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            let input = Self.mutate(seed, using: &rng)
            do throws(PostHandshakeError) {
                let (message, revision) = try PostHandshakeMessage.parse(input)
                // Whatever was accepted writes out and reads back as the same message, in either revision.
                let form: ProtocolRevision = tally.total.isMultiple(of: 2) ? .zero : .one
                let again = try? PostHandshakeMessage.parse(message.plaintext(revision: form))
                #expect(again?.message == message && again?.revision == form)
                tally.record("accepted revision \(revision.rawValue)")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["accepted revision 0", default: 0] > 0)
        #expect(tally.counts["accepted revision 1", default: 0] > 0)
        #expect(tally.counts["\(PostHandshakeError.undecodable)", default: 0] > 0)
        #expect(tally.counts.keys.contains { $0.hasPrefix("invalid linking information") })
    }

    @Test func paddedCBORDecode() async throws {
        let seeds = try Self.postHandshakeSeeds().filter { $0.count % 256 == 0 }
        try #require(!seeds.isEmpty)
        var rng = SeededRandom(seed: 7)
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            if iteration % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let input = Self.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)], using: &rng)
            do throws(PostHandshakeError) {
                let value = try PaddedCBOR.decode(input)
                #expect(value.mapValue != nil)
                #expect((try? PaddedCBOR.decode(PaddedCBOR.encode(value))) == value)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["accepted", default: 0] > 0 && tally.counts["accepted", default: 0] < Self.iterations)
    }

    // MARK: Framing, update, linking

    @Test func framedMessages() async {
        var rng = SeededRandom(seed: 8)
        var tally = Tally()
        let seeds: [[UInt8]] = [[0], [1, 0x04], [2, 0xA0], [3, 0x7B, 0x7D], [1, 0x01, 0xA1, 0x01, 0x02]]
        for index in 0..<Self.iterations {
            if index % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let revision: ProtocolRevision = index.isMultiple(of: 3) ? .zero : .one
            let input = Self.mutate(seeds[index % seeds.count], using: &rng)
            do throws(FramingError) {
                let message = try TunnelFrame(plaintext: input, revision: revision)
                #expect((try? message.plaintext(revision: revision)) == input)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["\(FramingError.empty)", default: 0] > 0)
        #expect(tally.counts.keys.contains { $0.hasSuffix("is unknown") })
    }

    @Test func updateMessages() async throws {
        let linking = try LinkingTests.Session().linking()
        let seeds = [UpdateMessage(linking: nil).payload, UpdateMessage(linking: linking).payload]
        var rng = SeededRandom(seed: 9)
        var tally = Tally()
        for iteration in 0..<Self.iterations {
            if iteration % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let input = Self.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)], using: &rng)
            do throws(PostHandshakeError) {
                let update = try UpdateMessage(payload: input)
                #expect((try? UpdateMessage(payload: update.payload)) == update)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(tally.counts["accepted", default: 0] > 0)
        #expect(tally.counts.keys.contains { $0.hasPrefix("invalid linking information") })
    }

    /// Byte-level mutations of an encoded linking map, and structured maps with random keys and values.
    @Test func linkingMaps() async throws {
        let session = try LinkingTests.Session()
        let valid = try session.linking(playServices: true)
        let encoded = valid.cborValue.encoded()
        let validMap = try #require(valid.cborValue.mapValue)
        var rng = SeededRandom(seed: 10)
        var tally = Tally()
        var undecodable = 0
        var index = 0
        // Runs until 100,000 values have reached LinkingInfo(cbor:); mutated bytes that are not CBOR do not count.
        while tally.total < Self.iterations {
            index += 1
            if index % 256 == 0 { await Task.yield() }  // let other tests run on this core
            let value: CBORValue
            if index.isMultiple(of: 2) {
                guard let decoded = try? CBORValue(decoding: Self.mutate(encoded, using: &rng)) else {
                    undecodable += 1
                    continue
                }
                value = decoded
            } else {
                var map = validMap
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let key: CBORValue = [1, 2, 3, 4, 5, 6, 999, 7, -1, "1"][Int.random(in: 0..<10, using: &rng)]
                    let size = [0, 1, 7, 8, 9, 31, 32, 33, 64, 65, 66][Int.random(in: 0..<11, using: &rng)]
                    let replacement: CBORValue? =
                        switch Int.random(in: 0..<6, using: &rng) {
                        case 0: nil
                        case 1: .bytes(rng.bytes(size))
                        case 2: .text(String(repeating: "n", count: size))
                        case 3: .bool(rng.next() & 1 == 0)
                        case 4: .unsigned(rng.next())
                        default: .bytes([0x04] + rng.bytes(64))
                        }
                    map[key] = replacement
                }
                value = .map(map)
            }
            do throws(LinkingError) {
                let linking = try LinkingInfo(cbor: value)
                #expect((try? LinkingInfo(cbor: linking.cborValue)) == linking)
                tally.record("accepted")
            } catch {
                tally.record(error)
            }
        }
        #expect(tally.total == Self.iterations)
        #expect(undecodable > 0)
        #expect(tally.counts["accepted", default: 0] > 0)
        for key in 1...6 {
            #expect(tally.counts["\(LinkingError.missingField(key))", default: 0] > 0, "missing key \(key)")
            #expect(tally.counts["\(LinkingError.invalidField(key))", default: 0] > 0, "invalid key \(key)")
        }
        #expect(tally.counts["\(LinkingError.invalidIdentityKey)", default: 0] > 0)
    }
}
