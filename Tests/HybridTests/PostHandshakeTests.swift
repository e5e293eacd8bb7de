import Basics
import CBOR
import Crypto
import Testing

@testable import Hybrid

/// The post-handshake message, revision detection, PaddedCBOR, framing and update messages.
struct PostHandshakeTests {
    /// hybrid.json `post_handshake_plaintexts`: Android Chrome and iOS 16, as recorded by webauthn-rs.
    @Test func realPostHandshakeMessages() throws {
        let entries = try #require(
            try HybridVectors.section("post_handshake_plaintexts") as? [[String: Any]], "post_handshake_plaintexts")
        try #require(!entries.isEmpty, "section post_handshake_plaintexts is empty")
        var names: Set<String> = []
        for entry in entries {
            let name = try #require(entry["name"] as? String)
            names.insert(name)
            let plaintext = try entry.hex("cbor")
            let (message, revision) = try PostHandshakeMessage.parse(plaintext)
            #expect(revision == .one)
            #expect(message.features == nil && message.supportsCTAP)
            #expect(message.linking == nil)
            #expect(message.cborValue.encoded() == plaintext, "\(name) re-encodes byte for byte")
            #expect(message.plaintext(revision: .one) == plaintext)

            let getInfoBytes = try #require(message.getInfo)
            let getInfo = try CBORValue(decoding: getInfoBytes)
            #expect(getInfo.encoded() == getInfoBytes, "\(name) getInfo is canonical")
            let map = try #require(getInfo.mapValue)
            let versions = try #require(map[1]?.arrayValue).compactMap(\.textValue)
            #expect(versions.contains("FIDO_2_0"))
            let options = try #require(map[4]?.mapValue)
            #expect(options["rk"] == true && options["uv"] == true)
            let transports = try #require(map[9]?.arrayValue).compactMap(\.textValue)
            #expect(transports.contains("hybrid") && transports.contains("internal"))
            let aaguid = try #require(map[3]?.bytesValue)
            switch name {
            case "android-chrome":
                #expect(versions == ["FIDO_2_0", "FIDO_2_1"])
                #expect(aaguid == [UInt8](repeating: 0, count: 16))
                #expect(try #require(map[2]?.arrayValue).compactMap(\.textValue) == ["devicePubKey", "prf"])
            case "ios16":
                #expect(versions == ["FIDO_2_0"])
                #expect(aaguid == [UInt8](hex: "f24a8e70d0d3f82c293732523cc4de5a"))
            default:
                Issue.record("unexpected vector \(name)")
            }

            // The same message padded as revision 0 parses back with the same content.
            let padded = message.plaintext(revision: .zero)
            #expect(padded.count == 512)
            let (again, oldRevision) = try PostHandshakeMessage.parse(padded)
            #expect(again == message && oldRevision == .zero)
        }
        #expect(names == ["android-chrome", "ios16"])
    }

    /// Chromium v2_handshake_unittest.cc `PaddedCBOR`: an empty map pads to 512, a map with a 512-byte string to
    /// 1024, and the trailing two bytes count the zeros little-endian.
    @Test func paddedCBORSizes() throws {
        let empty = PaddedCBOR.encode(.map([:]))
        #expect(empty.count == 512)
        #expect(empty[0] == 0xA0 && empty[509] == 0 && empty[510] == 0xFD && empty[511] == 0x01)
        #expect(try PaddedCBOR.decode(empty) == .map([:]))

        let large = PaddedCBOR.encode([1: .bytes([UInt8](repeating: 0, count: 512))])
        #expect(large.count == 1024)
        #expect(try PaddedCBOR.decode(large).mapValue?.count == 1)
    }

    /// Chromium v2_handshake_unittest.cc `OldPaddedCBOR`: the form before M99 (trailing UInt8, granularity 256) is
    /// still decoded, for every size up to 512. The old encoder is written out here, from the unit test.
    @Test func oldPaddedCBORIsDecoded() throws {
        func oldPadded(_ value: CBORValue) -> [UInt8] {
            var bytes = value.encoded()
            let padded = (bytes.count + 1 + 255) / 256 * 256
            let extra = padded - bytes.count
            bytes += [UInt8](repeating: 0, count: extra)
            bytes[padded - 1] = UInt8(extra - 1)
            return bytes
        }
        for size in 0..<512 {
            let value: CBORValue = [1: .bytes([UInt8](repeating: 0, count: size))]
            let padded = oldPadded(value)
            #expect(padded.count % 256 == 0)
            #expect(try PaddedCBOR.decode(padded) == value, "size \(size)")
        }
        let message = PostHandshakeMessage(getInfo: [0xA0], features: [.ctap])
        let (parsed, revision) = try PostHandshakeMessage.parse(oldPadded(message.cborValue))
        #expect(parsed == message && revision == .zero)
    }

    @Test func paddedCBORRefusals() {
        let refused: [[UInt8]] = [
            [],
            [0x00],  // 16-bit: too short; 8-bit: strips everything, nothing left
            [0xA0, 0x05, 0x00],  // 16-bit claims 5 bytes; 8-bit leaves [A0, 05], not one item
            [0x81, 0x00, 0x00, 0x00],  // an array, not a map, under both forms
            [0xA1, 0x01, 0x00, 0x01],  // 16-bit claims 256 bytes; 8-bit leaves A1 01, a truncated map
        ]
        for bytes in refused {
            #expect(throws: PostHandshakeError.undecodable) { try PaddedCBOR.decode(bytes) }
        }
    }

    @Test func featuresAndGetInfoRules() throws {
        let getInfo: [UInt8] = [0xA1, 0x01, 0x81, 0x68] + Array("FIDO_2_1".utf8)
        func parse(_ value: CBORValue) throws(PostHandshakeError) -> PostHandshakeMessage {
            try PostHandshakeMessage.parse(value.encoded()).message
        }
        // Chromium's phone: features sorted, getInfo present.
        let chromium = try parse([1: .bytes(getInfo), 3: ["ctap", "dc"]])
        #expect(chromium.features == [.ctap, .digitalCredentials] && chromium.supportsCTAP)
        #expect(chromium.getInfo == getInfo)
        // Digital credentials only: no getInfo allowed.
        let dcOnly = try parse([3: ["dc"]])
        #expect(!dcOnly.supportsCTAP && dcOnly.getInfo == nil)
        #expect(throws: PostHandshakeError.unexpectedGetInfo) { try parse([1: .bytes(getInfo), 3: ["dc"]]) }
        // Absent features mean CTAP, which needs getInfo as a byte string.
        #expect(throws: PostHandshakeError.missingGetInfo) { try parse([:]) }
        #expect(throws: PostHandshakeError.missingGetInfo) { try parse([1: "not bytes"]) }
        #expect(throws: PostHandshakeError.missingGetInfo) { try parse([3: ["ctap"]]) }
        #expect(throws: PostHandshakeError.invalidFeatures) { try parse([1: .bytes(getInfo), 3: "ctap"]) }
        // Entries that are not text are skipped and unknown names kept, as in Chromium.
        let odd = try parse([1: .bytes(getInfo), 3: [1, "ctap", "future"]])
        #expect(odd.features == [.ctap, HybridFeature(rawValue: "future")])
        // Unknown keys are ignored.
        #expect(try parse([1: .bytes(getInfo), 1000: true]).getInfo == getInfo)
        // Not a map; not CBOR at all (and not padded either).
        #expect(throws: PostHandshakeError.notAMap) { try PostHandshakeMessage.parse([0x80]) }
        #expect(throws: PostHandshakeError.undecodable) { try PostHandshakeMessage.parse([0xFF, 0xFF, 0xFF]) }
        #expect(throws: PostHandshakeError.undecodable) { try PostHandshakeMessage.parse([]) }
        // A malformed linking map (key 2) refuses the message.
        #expect(throws: PostHandshakeError.invalidLinking(.notAMap)) { try parse([1: .bytes(getInfo), 2: 5]) }
        #expect(throws: PostHandshakeError.invalidLinking(.missingField(1))) {
            try parse([1: .bytes(getInfo), 2: [:]])
        }
    }

    @Test func framingRevisionOne() throws {
        for type: UInt8 in 0...3 {
            let message = try TunnelFrame(plaintext: [type, 0xAA, 0xBB], revision: .one)
            #expect(message.type.rawValue == type && message.payload == [0xAA, 0xBB])
            #expect(try message.plaintext(revision: .one) == [type, 0xAA, 0xBB])
        }
        #expect(try TunnelFrame(plaintext: [0], revision: .one) == .shutdown)
        #expect(try TunnelFrame.shutdown.plaintext(revision: .one) == [0])
        #expect(throws: FramingError.empty) { try TunnelFrame(plaintext: [], revision: .one) }
        for type: UInt8 in [4, 5, 0x7F, 0xFF] {
            #expect(throws: FramingError.unknownType(type)) { try TunnelFrame(plaintext: [type, 1], revision: .one) }
        }
        // The first client frame of a makeCredential (write-up §6): type 1, CTAP command 1, the CBOR map.
        let frame = TunnelFrame(type: .ctap, payload: [0x01, 0xA0])
        #expect(try frame.plaintext(revision: .one) == [0x01, 0x01, 0xA0])
        // Unknown types can be built (open set), but a Chromium peer refuses them.
        #expect(try TunnelFrame(type: TunnelFrameType(rawValue: 9), payload: []).plaintext(revision: .one) == [9])
    }

    @Test func framingRevisionZero() throws {
        let ctap: [UInt8] = [0x00, 0xA1, 0x01, 0x02]
        #expect(try TunnelFrame(plaintext: ctap, revision: .zero) == TunnelFrame(type: .ctap, payload: ctap))
        #expect(try TunnelFrame(plaintext: [], revision: .zero) == TunnelFrame(type: .ctap, payload: []))
        #expect(try TunnelFrame(type: .ctap, payload: ctap).plaintext(revision: .zero) == ctap)
        for type in [TunnelFrameType.shutdown, .update, .json] {
            #expect(throws: FramingError.typeNotInRevisionZero(type)) {
                try TunnelFrame(type: type, payload: []).plaintext(revision: .zero)
            }
        }
    }

    /// The Chromium phone's update message encrypts to exactly 512 + 16 bytes, with or without linking
    /// information (v2_authenticator.cc `DCHECK_EQ(update_msg_bytes->size(), kPaddingTarget + 16)`).
    @Test func updateMessagesArePaddedTo512() throws {
        let withoutLinking = UpdateMessage(linking: nil)
        let identity = P256.KeyAgreement.PrivateKey()
        let qrKey = P256.KeyAgreement.PrivateKey()
        var linkings: [LinkingInfo] = []
        for contactLength in [0, 16, 152, 300] {
            linkings.append(
                try LinkingInfo(
                    contactID: [UInt8](repeating: 0xC1, count: contactLength), linkID: [UInt8](repeating: 2, count: 8),
                    linkSecret: [UInt8](repeating: 3, count: 32), identityKey: identity, name: "Pixel 7",
                    clientQRPublicKey: qrKey.publicKey, handshakeHash: [UInt8](repeating: 4, count: 32)))
        }
        var crypter = try Crypter(
            readKey: SymmetricKey(data: [UInt8](repeating: 1, count: 32)),
            writeKey: SymmetricKey(data: [UInt8](repeating: 2, count: 32)))
        for update in [withoutLinking] + linkings.map(UpdateMessage.init(linking:)) {
            let plaintext = try update.frame.plaintext(revision: .one)
            #expect(plaintext.first == 2)
            #expect(try crypter.encrypt(plaintext).count == 512 + 16)
            #expect(try UpdateMessage(payload: Array(plaintext.dropFirst())) == update)
            let map = try #require(try CBORValue(decoding: update.payload).mapValue)
            #expect(map[0]?.bytesValue?.allSatisfy { $0 == 0 } == true)
        }
        // Without linking information, the padding is the full 492 bytes.
        #expect(try CBORValue(decoding: withoutLinking.payload).mapValue?[0]?.bytesValue?.count == 492)
    }

    @Test func updateMessageRefusals() throws {
        #expect(throws: PostHandshakeError.undecodable) { try UpdateMessage(payload: []) }
        #expect(throws: PostHandshakeError.undecodable) { try UpdateMessage(payload: [0xA0, 0x00]) }
        #expect(throws: PostHandshakeError.notAMap) { try UpdateMessage(payload: [0x01]) }
        #expect(throws: PostHandshakeError.invalidLinking(.notAMap)) {
            try UpdateMessage(payload: CBORValue.map([1: "x"]).encoded())
        }
        // Padding alone, or unknown keys, is a valid update without linking information.
        #expect(try UpdateMessage(payload: CBORValue.map([0: .bytes([0, 0]), 7: 1]).encoded()).linking == nil)
    }
}
