import CBOR
import Crypto
import TestSupport
import Testing

@testable import Hybrid

/// Seeded random and mutated inputs for every parser of the discovery layer. Each input must give a typed error
/// or a value, never a crash or a hang; where the format is canonical an accepted input must re-serialise to
/// itself. Half or more of each run mutates valid encodings, so the deep paths are reached too.
struct ParserFuzzTests {
    static let count = 100_000
    static let digitAlphabet = Array("0123456789".utf8) + Array("0123456789".utf8) + Array("a+- /".utf8)

    @Test func digitEncoding() {
        var random = SeededRandom(seed: 0xD161_7500)
        var accepted = 0
        var failures: [String] = []
        for round in 0..<Self.count {
            let input: [UInt8]
            if round % 2 == 0 {
                let valid = Array(DigitEncoding.encode(random.bytes(random.below(30))).utf8)
                input = random.mutate(valid, alphabet: Self.digitAlphabet)
            } else {
                input = (0..<random.below(40)).map { _ in Self.digitAlphabet[random.below(Self.digitAlphabet.count)] }
            }
            let text = String(decoding: input, as: UTF8.self)
            let bytes: [UInt8]
            do {
                bytes = try DigitEncoding.decode(text)
            } catch {
                _ = error.description  // typed: DigitEncodingError
                continue
            }
            accepted += 1
            if DigitEncoding.encode(bytes) != text { failures.append(text) }
        }
        #expect(failures == [])
        #expect(accepted > Self.count / 10)  // the mutations reach the decoder's success path
    }

    /// A handful of valid payloads to mutate; keys come from a seeded scalar so the run replays exactly.
    static func seedPayloads(_ random: inout SeededRandom) throws -> [QRCodePayload] {
        var payloads: [QRCodePayload] = []
        for index in 0..<4 {
            var scalar = random.bytes(32)
            scalar[0] &= 0x7F  // below the group order
            let key = try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar)
            let types: [HybridRequestType?] = [.getAssertion, .makeCredential, nil, HybridRequestType(rawValue: "dcp")]
            payloads.append(
                try QRCodePayload(
                    publicKey: key.publicKey, secret: random.bytes(16), knownDomainCount: index == 2 ? nil : index,
                    timestamp: index == 1 ? nil : random.next() >> UInt64(random.below(64)),
                    stateAssisted: index == 3 ? nil : index.isMultiple(of: 2), requestType: types[index]))
        }
        return payloads
    }

    /// A value of a random CBOR type, with the lengths and texts the QR parser cares about over-represented.
    static func randomValue(_ random: inout SeededRandom) -> CBORValue {
        switch random.below(9) {
        case 0: .bytes(random.bytes([0, 1, 15, 16, 17, 32, 33, 34, 65][random.below(9)]))
        case 1: .unsigned(random.next() >> UInt64(random.below(64)))
        case 2: .negative(random.next() >> UInt64(random.below(64)))
        case 3: .text(["ga", "mc", "dcp", "dci", "", "GA"][random.below(6)])
        case 4: .bool(random.oneIn(2))
        case 5: .null
        case 6: [0, 1]
        case 7: .map([1: 2])
        default: .float(0.5)
        }
    }

    static let qrKeys: [CBORValue] = [0, 1, 2, 3, 4, 5, 6, 7, 1000, -1, "x"]

    /// Map-level inputs: edited entries, mutated CBOR and small random maps, digit-encoded properly. These reach
    /// the map rules and the point decompression, which is slow in a debug build, hence half the inputs here.
    @Test func qrCodeURLMaps() throws {
        let reasons = try Self.fuzzQRCodeURLs(seed: 0x0051_C0DE, kinds: [0, 2, 4, 5], count: Self.count / 2)
        for kind in [
            "accepted", "invalidCBOR", "notAMap", "missingKey", "wrongType", "publicKeyWrongLength",
            "publicKeyNotOnCurve", "secretWrongLength",
        ] {
            #expect(reasons[kind, default: 0] > 0, "\(kind) never reached: \(reasons)")
        }
    }

    /// Text-level inputs: mutated URLs, random digits and broken prefixes; the other half.
    @Test func qrCodeURLText() throws {
        let reasons = try Self.fuzzQRCodeURLs(seed: 0x0051_7E47, kinds: [1, 3, 6, 7], count: Self.count / 2)
        for kind in ["accepted", "missingPrefix", "invalidDigits", "invalidCBOR"] {
            #expect(reasons[kind, default: 0] > 0, "\(kind) never reached: \(reasons)")
        }
    }

    /// Parses `count` generated URLs and checks every accepted one; returns how often each outcome occurred.
    static func fuzzQRCodeURLs(seed: UInt64, kinds: [Int], count: Int) throws -> [String: Int] {
        var random = SeededRandom(seed: seed)
        let payloads = try Self.seedPayloads(&random)
        let maps = try payloads.map { try #require(try CBORValue(decoding: $0.cborBytes).mapValue) }
        let cbors = payloads.map(\.cborBytes)
        let urls = payloads.map(\.url)
        var reasons: [String: Int] = [:]
        var failures: [String] = []
        for round in 0..<count {
            let which = random.below(payloads.count)
            let url: String
            switch kinds[round % kinds.count] {
            case 0:
                // Entry-level edits of a valid map: reach every map rule and the point decompression.
                var map = maps[which]
                for _ in 0...random.below(2) {
                    let key = Self.qrKeys[random.below(Self.qrKeys.count)]
                    switch random.below(5) {
                    case 0: map[key] = nil
                    case 1: map[key] = Self.randomValue(&random)
                    case 2: map[0] = .bytes([2 + UInt8(random.below(2))] + random.bytes(32))
                    case 3:
                        if case .bytes(var bytes)? = map[0], !bytes.isEmpty {
                            bytes[random.below(bytes.count)] ^= 1 << UInt8(random.below(8))
                            map[0] = .bytes(bytes)
                        }
                    default: map[[6, 1000, -1, "x"][random.below(4)]] = Self.randomValue(&random)
                    }
                }
                var cbor = CBORValue.map(map).encoded()
                if random.oneIn(4) { cbor = random.mutate(cbor, maximumEdits: 1) }
                url = (random.oneIn(2) ? "FIDO:/" : "fido:/") + DigitEncoding.encode(cbor)
            case 2:
                url = "FIDO:/" + DigitEncoding.encode(random.mutate(cbors[which], maximumEdits: 2))
            case 1, 3:
                url = String(
                    decoding: random.mutate(Array(urls[which].utf8), alphabet: Self.digitAlphabet), as: UTF8.self)
            case 4, 5:
                // Small maps of random entries: cheap, and they reach the type and presence rules.
                var map: [CBORValue: CBORValue] = [:]
                for _ in 0..<random.below(5) { map[Self.qrKeys[random.below(7)]] = Self.randomValue(&random) }
                let value: CBORValue = random.oneIn(16) ? Self.randomValue(&random) : .map(map)
                url = "FIDO:/" + DigitEncoding.encode(value.encoded())
            case 6:
                let prefix = ["FIDO:/", "fido:/", "FIDO:", "FID0:/", ""][random.below(5)]
                url = prefix + String(decoding: random.bytes(random.below(40)).map { $0 % 10 + 48 }, as: UTF8.self)
            default:
                url = "FIDO:/" + DigitEncoding.encode(random.bytes(random.below(30)))
            }
            let payload: QRCodePayload
            do {
                payload = try QRCodePayload(url: url)
            } catch {
                reasons[Self.kind(error), default: 0] += 1
                continue
            }
            reasons["accepted", default: 0] += 1
            // The input's map as read back from the digits (the parser accepted them, so they decode).
            let bytes = (try? DigitEncoding.decode(url.dropFirst(6))) ?? []
            let map = (try? CBORValue(decoding: bytes))?.mapValue ?? [:]
            // Writing keeps keys 0–5 (key 3 only as an unsigned integer), adds key 4 when absent and drops the rest.
            var expected = map.filter { [0, 1, 2, 4, 5].contains($0.key) }
            if case .unsigned? = map[3] { expected[3] = map[3] }
            expected[4] = expected[4] ?? false
            if expected == map {
                // Canonical input: written back exactly, with the prefix in upper case.
                if payload.url != "FIDO:/" + url.dropFirst(6) { failures.append(url) }
            } else if (try? CBORValue(decoding: payload.cborBytes)) != .map(expected) {
                failures.append(url)
            }
            if reasons["accepted", default: 0] % 64 == 0,
                Array(payload.publicKey.compressedRepresentation) != payload.compressedPublicKey
            {
                failures.append(url)
            }
        }
        #expect(failures == [])
        return reasons
    }

    static func kind(_ error: QRCodeError) -> String {
        switch error {
        case .missingPrefix: "missingPrefix"
        case .invalidDigits: "invalidDigits"
        case .invalidCBOR: "invalidCBOR"
        case .notAMap: "notAMap"
        case .missingKey: "missingKey"
        case .wrongType: "wrongType"
        case .publicKeyWrongLength: "publicKeyWrongLength"
        case .publicKeyNotOnCurve: "publicKeyNotOnCurve"
        case .secretWrongLength: "secretWrongLength"
        }
    }

    @Test func advertDecryption() throws {
        var random = SeededRandom(seed: 0xAD7E_0000)
        let keys = (0..<3).map { _ in KeyDerivation.eidKey(qrSecret: random.bytes(16)) }
        var outcomes: [String: Int] = [:]
        var failures: [[UInt8]] = []
        for round in 0..<Self.count {
            let key = keys[random.below(keys.count)]
            let advert: [UInt8]
            switch round % 4 {
            case 0:
                // Authentic adverts around random blocks: reach every plaintext rule.
                var block = random.bytes(16)
                if !random.oneIn(4) { block[0] = 0 }
                if random.oneIn(2) { block[15] = 0 }
                advert = key.seal(block)
            case 1:
                let plaintext = try AdvertPlaintext(
                    nonce: random.bytes(10), routingID: RoutingID(bytes: random.bytes(3)), domain: .google)
                advert = random.mutate(key.encrypt(plaintext), maximumEdits: 2)
            case 2:
                advert = random.bytes(20)
            default:
                advert = random.bytes(random.below(26))
            }
            do {
                let (index, plaintext) = try EIDKey.decrypt(advert, candidates: keys)
                outcomes["accepted", default: 0] += 1
                if keys[index].encrypt(plaintext) != advert { failures.append(advert) }
            } catch {
                outcomes[Self.kind(error), default: 0] += 1
            }
        }
        #expect(failures == [])
        for kind in ["accepted", "wrongLength", "tagMismatch", "reservedByteNotZero", "unassignedDomain"] {
            #expect(outcomes[kind, default: 0] > 0, "\(kind) never reached: \(outcomes)")
        }
    }

    static func kind(_ error: AdvertError) -> String {
        switch error {
        case .wrongLength: "wrongLength"
        case .invalidKeyLength: "invalidKeyLength"
        case .invalidNonceLength: "invalidNonceLength"
        case .tagMismatch: "tagMismatch"
        case .reservedByteNotZero: "reservedByteNotZero"
        case .unassignedDomain: "unassignedDomain"
        }
    }

    @Test func advertisingData() throws {
        var random = SeededRandom(seed: 0xADDA_7A00)
        let caBLE = try AdvertisingData.caBLE(advert: random.bytes(20)).bytes
        var accepted = 0
        var foundAdverts = 0
        var failures: [[UInt8]] = []
        for round in 0..<Self.count {
            let input: [UInt8]
            switch round % 3 {
            case 0: input = random.mutate(caBLE)
            case 1: input = random.mutate([0x02, 0x01, 0x06] + caBLE + [0x03, 0xFF, 0x4C, 0x00])
            default: input = random.bytes(random.below(40))
            }
            let data: AdvertisingData
            do {
                data = try AdvertisingData(bytes: input)
            } catch {
                _ = error.description  // typed: AdvertisingDataError
                continue
            }
            accepted += 1
            if data.caBLEAdvert != nil { foundAdverts += 1 }
            let bytes = data.bytes
            // Re-serialising gives the input up to the first zero length byte.
            let endsThere = bytes.count == input.count || input[bytes.count] == 0
            if !input.starts(with: bytes) || !endsThere || (try? AdvertisingData(bytes: bytes)) != data {
                failures.append(input)
            }
        }
        #expect(failures == [])
        #expect(accepted > Self.count / 10 && foundAdverts > Self.count / 20)
    }

    static let pathAlphabet = Array("0123456789abcdefABCDEF/-_+=?%.xyzcablenwotc".utf8)

    @Test func tunnelPaths() throws {
        var random = SeededRandom(seed: 0x7A7B_0000)
        var accepted: [String: Int] = [:]
        var failures: [String] = []
        for round in 0..<Self.count {
            let valid: TunnelPath
            switch round % 3 {
            case 0: valid = .new(try TunnelID(bytes: random.bytes(16)))
            case 1: valid = .connect(try RoutingID(bytes: random.bytes(3)), try TunnelID(bytes: random.bytes(16)))
            default: valid = .contact(random.bytes(1 + random.below(40)))
            }
            let input = String(
                decoding: random.mutate(Array(valid.path.utf8), maximumEdits: 2, alphabet: Self.pathAlphabet),
                as: UTF8.self)
            let path: TunnelPath
            do {
                path = try TunnelPath(path: input)
            } catch {
                _ = error.description  // typed: TunnelPathError
                continue
            }
            let written = path.path
            switch path {
            case .new: accepted["new", default: 0] += 1
            case .connect: accepted["connect", default: 0] += 1
            case .contact: accepted["contact", default: 0] += 1
            }
            // A query is ignored; hex is read in either case and written in upper case; base64url is case-sensitive.
            let target = String(input.prefix { $0 != "?" })
            let same: Bool
            if case .contact = path {
                same = written == target
            } else {
                same = written.lowercased() == target.lowercased()
            }
            if !same || (try? TunnelPath(path: written)) != path { failures.append(input) }
        }
        #expect(failures == [])
        #expect(
            accepted["new", default: 0] > 0 && accepted["connect", default: 0] > 0
                && accepted["contact", default: 0] > 0)
    }

    static let hexAlphabet = Array("0123456789abcdefABCDEFgx :".utf8)

    @Test func routingIDHeader() {
        var random = SeededRandom(seed: 0x4EAD_E400)
        var accepted = 0
        var failures: [String] = []
        for round in 0..<Self.count {
            let input: String
            if round % 2 == 0 {
                input = String(
                    decoding: random.mutate(
                        Array(RoutingID(validBytes: random.bytes(3)).hex.utf8), maximumEdits: 2,
                        alphabet: Self.hexAlphabet), as: UTF8.self)
            } else {
                input = String(
                    decoding: (0..<random.below(9)).map { _ in Self.hexAlphabet[random.below(Self.hexAlphabet.count)] },
                    as: UTF8.self)
            }
            let id: RoutingID
            do {
                id = try RoutingID(hex: input)
            } catch {
                _ = error.description  // typed: TunnelIdentifierError
                continue
            }
            accepted += 1
            if id.hex != input.uppercased() || (try? RoutingID(hex: id.hex)) != id { failures.append(input) }
        }
        #expect(failures == [])
        #expect(accepted > Self.count / 20)
    }

    static let urlAlphabet = Array("ws:/[]0123456789.abcdefhost:@?#-".utf8)

    @Test func tunnelServerBaseURL() throws {
        var random = SeededRandom(seed: 0xBA5E_0000)
        let valid = ["ws://127.0.0.1:8080", "wss://relay.example.com", "ws://[::1]:9000/", "wss://localhost:443"]
        var accepted = 0
        var failures: [String] = []
        for _ in 0..<Self.count {
            let input = String(
                decoding: random.mutate(Array(valid[random.below(valid.count)].utf8), alphabet: Self.urlAlphabet),
                as: UTF8.self)
            let base: TunnelServerBaseURL
            do {
                base = try TunnelServerBaseURL(string: input)
            } catch {
                _ = error.description  // typed: TunnelServerURLError
                continue
            }
            accepted += 1
            if (try? TunnelServerBaseURL(string: base.string)) != base { failures.append(input) }
        }
        #expect(failures == [])
        #expect(accepted > Self.count / 20)
    }
}
