import Basics
import Crypto
import Foundation
import Hybrid
import Testing

@testable import TerminalIO

/// `passkey inspect qr|advert|domain` as a person and a script read it.
struct HybridInspectionTests {
    static let secret: [UInt8] = Array(0..<16)
    static let key = try! P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))

    @Test func aQRCodeShowsEveryFieldAsTextAndJSON() throws {
        let payload = try QRCodePayload(
            clientKey: Self.key, secret: Self.secret, requestType: .makeCredential, timestamp: 1_800_000_000)
        let report = HybridInspection.QRCodeReport(payload)
        let publicKey = Array(Self.key.publicKey.compressedRepresentation).hexString
        #expect(
            report.lines == [
                "public key      \(publicKey)", "secret          000102030405060708090a0b0c0d0e0f",
                "known domains   2", "timestamp       1800000000 (2027-01-15T08:00:00Z)", "state-assisted  false",
                "request type    mc (makeCredential)",
            ])
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(JSONOutput.text(report.jsonObject).utf8))
                as? [String: Any])
        #expect(json["publicKey"] as? String == publicKey)
        #expect(json["secret"] as? String == "000102030405060708090a0b0c0d0e0f")
        #expect(json["knownDomains"] as? Int == 2 && json["timestamp"] as? Int == 1_800_000_000)
        #expect(json["stateAssisted"] as? Bool == false && json["requestType"] as? String == "mc")
    }

    /// Keys 2 to 5 absent: JSON leaves them out, text says how a client reads their absence.
    @Test func absentKeysAreLeftOutOfJSONAndExplainedInText() throws {
        let report = HybridInspection.QRCodeReport(
            try QRCodePayload(publicKey: Self.key.publicKey, secret: Self.secret))
        #expect(Set(report.jsonObject.keys) == ["publicKey", "secret"])
        #expect(
            Array(report.lines.dropFirst(2)) == [
                "known domains   absent (read as 0)", "timestamp       absent", "state-assisted  absent",
                "request type    absent (read as ga, getAssertion)",
            ])
    }

    /// The request type is text whoever made the code chose: OSC and CSI sequences in it are shown as escapes, not
    /// sent to the terminal (issue 10, defect 5).
    @Test func aHostileRequestTypeIsEscaped() throws {
        let hostile = HybridRequestType(rawValue: "\u{1B}]0;pwned\u{7}\u{1B}[2J")
        let report = HybridInspection.QRCodeReport(
            try QRCodePayload(publicKey: Self.key.publicKey, secret: Self.secret, requestType: hostile))
        let line = try #require(report.lines.last)
        #expect(line == "request type    \\u{1B}]0;pwned\\u{7}\\u{1B}[2J (getAssertion, read as ga)")
        #expect(!report.lines.joined().unicodeScalars.contains { $0.value < 0x20 })
    }

    static func advert(secret: [UInt8] = secret) throws -> [UInt8] {
        let plaintext = try AdvertPlaintext(
            nonce: Array(repeating: 0xAA, count: 10), routingID: try RoutingID(bytes: [0x01, 0x02, 0x03]),
            domain: try TunnelDomain(id: 1))
        return KeyDerivation.eidKey(qrSecret: secret).encrypt(plaintext)
    }

    @Test func anAdvertOfThisQRCodeNamesItsTunnel() throws {
        let report = HybridInspection.AdvertReport(secret: Self.secret, advert: try Self.advert())
        let tunnelID = KeyDerivation.tunnelID(qrSecret: Self.secret).hex
        let connect = "wss://cable.auth.com/cable/connect/010203/\(tunnelID)"
        #expect(
            report.lines == [
                "valid        yes", "nonce        aaaaaaaaaaaaaaaaaaaa", "routing ID   010203",
                "domain       \(try TunnelDomain(id: 1))", "tunnel ID    \(tunnelID)", "connect URL  \(connect)",
            ])
        let json = report.jsonObject
        #expect(json["valid"] as? Bool == true && json["routingId"] as? String == "010203")
        #expect(json["domainId"] as? Int == 1 && json["tunnelId"] as? String == tunnelID)
        #expect(json["connectURL"] as? String == connect)
    }

    /// An advert another QR code's secret made, or one damaged on the air, is a finding (exit 0), with its reason.
    @Test func anAdvertOfAnotherQRCodeIsReportedInvalid() throws {
        var damaged = try Self.advert()
        damaged[19] ^= 0xFF
        for advert in [damaged, try Self.advert(secret: Array(repeating: 0, count: 16))] {
            let report = HybridInspection.AdvertReport(secret: Self.secret, advert: advert)
            #expect(report.jsonObject["valid"] as? Bool == false)
            #expect(report.jsonObject["reason"] as? String == "advert tag does not match: not encrypted with this key")
            #expect(report.lines == ["valid        no: advert tag does not match: not encrypted with this key"])
        }
    }

    @Test func anAdvertIsReadFromItsBytesOrFromAdvertisingData() throws {
        let advert = try Self.advert()
        #expect(try HybridInspection.serviceData(fromHex: advert.hexString) == advert)
        // Flags, then service data for UUID 0xFFF9 (little-endian f9 ff) holding the 20 bytes.
        let advertisingData = [0x02, 0x01, 0x06, 0x17, 0x16, 0xF9, 0xFF] + advert
        #expect(try HybridInspection.serviceData(fromHex: advertisingData.hexString) == advert)
    }

    @Test(arguments: [
        ("not hex", "the advert must be hex"),
        (String(repeating: "ab", count: 19), "the advert is 19 bytes, not 20, and not advertising data"),
        ("0303f9ff", "with 20 bytes of service data for UUID 0xFDE2 or 0xFFF9"),
        ("1816f9ff" + String(repeating: "ab", count: 20), "runs past the end"),
    ])
    func textThatIsNoAdvertIsAClearError(text: String, message: String) {
        #expect {
            _ = try HybridInspection.serviceData(fromHex: text)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func aDomainShowsItsHost() throws {
        let report = HybridInspection.DomainReport(try TunnelDomain(id: 0))
        #expect(report.lines == ["id    0", "host  cable.ua5v.com"])
        #expect(report.jsonObject["host"] as? String == "cable.ua5v.com" && report.jsonObject["id"] as? Int == 0)
    }
}
