import Basics
import Foundation
import Testing

/// TOTP and HOTP against the test vectors of their RFCs, base32 against RFC 4648's, and the Key Uri Format.
struct OneTimeCodeTests {
    /// RFC 6238 appendix B: one row of the table, with the RFC's column names (Unix Time, UTC Time, Value of T
    /// (hex), TOTP, Mode).
    struct TOTPVector: Sendable, CustomTestStringConvertible {
        var unixTime: Int64
        var utcTime: String
        var valueOfT: String
        var totp: String
        var mode: OneTimeCode.Algorithm

        var testDescription: String { "\(utcTime) \(mode)" }
    }

    /// The appendix's seeds: the ASCII digits "1234567890" repeated to 20, 32 and 64 bytes.
    static func seed(_ mode: OneTimeCode.Algorithm) -> [UInt8] {
        let length = [OneTimeCode.Algorithm.sha1: 20, .sha256: 32, .sha512: 64][mode]!
        return Array(String(repeating: "1234567890", count: 7).utf8.prefix(length))
    }

    static let rfc6238: [TOTPVector] = [
        .init(
            unixTime: 59, utcTime: "1970-01-01 00:00:59", valueOfT: "0000000000000001", totp: "94287082", mode: .sha1),
        .init(
            unixTime: 59, utcTime: "1970-01-01 00:00:59", valueOfT: "0000000000000001", totp: "46119246", mode: .sha256),
        .init(
            unixTime: 59, utcTime: "1970-01-01 00:00:59", valueOfT: "0000000000000001", totp: "90693936", mode: .sha512),
        .init(
            unixTime: 1_111_111_109, utcTime: "2005-03-18 01:58:29", valueOfT: "00000000023523EC", totp: "07081804",
            mode: .sha1),
        .init(
            unixTime: 1_111_111_109, utcTime: "2005-03-18 01:58:29", valueOfT: "00000000023523EC", totp: "68084774",
            mode: .sha256),
        .init(
            unixTime: 1_111_111_109, utcTime: "2005-03-18 01:58:29", valueOfT: "00000000023523EC", totp: "25091201",
            mode: .sha512),
        .init(
            unixTime: 1_111_111_111, utcTime: "2005-03-18 01:58:31", valueOfT: "00000000023523ED", totp: "14050471",
            mode: .sha1),
        .init(
            unixTime: 1_111_111_111, utcTime: "2005-03-18 01:58:31", valueOfT: "00000000023523ED", totp: "67062674",
            mode: .sha256),
        .init(
            unixTime: 1_111_111_111, utcTime: "2005-03-18 01:58:31", valueOfT: "00000000023523ED", totp: "99943326",
            mode: .sha512),
        .init(
            unixTime: 1_234_567_890, utcTime: "2009-02-13 23:31:30", valueOfT: "000000000273EF07", totp: "89005924",
            mode: .sha1),
        .init(
            unixTime: 1_234_567_890, utcTime: "2009-02-13 23:31:30", valueOfT: "000000000273EF07", totp: "91819424",
            mode: .sha256),
        .init(
            unixTime: 1_234_567_890, utcTime: "2009-02-13 23:31:30", valueOfT: "000000000273EF07", totp: "93441116",
            mode: .sha512),
        .init(
            unixTime: 2_000_000_000, utcTime: "2033-05-18 03:33:20", valueOfT: "0000000003F940AA", totp: "69279037",
            mode: .sha1),
        .init(
            unixTime: 2_000_000_000, utcTime: "2033-05-18 03:33:20", valueOfT: "0000000003F940AA", totp: "90698825",
            mode: .sha256),
        .init(
            unixTime: 2_000_000_000, utcTime: "2033-05-18 03:33:20", valueOfT: "0000000003F940AA", totp: "38618901",
            mode: .sha512),
        .init(
            unixTime: 20_000_000_000, utcTime: "2603-10-11 11:33:20", valueOfT: "0000000027BC86AA", totp: "65353130",
            mode: .sha1),
        .init(
            unixTime: 20_000_000_000, utcTime: "2603-10-11 11:33:20", valueOfT: "0000000027BC86AA", totp: "77737706",
            mode: .sha256),
        .init(
            unixTime: 20_000_000_000, utcTime: "2603-10-11 11:33:20", valueOfT: "0000000027BC86AA", totp: "47863826",
            mode: .sha512),
    ]

    @Test(arguments: rfc6238)
    func rfc6238AppendixB(vector: TOTPVector) {
        let parameters = OneTimeCode.Parameters(algorithm: vector.mode, digits: 8, period: 30)
        let counter = OneTimeCode.counter(atSeconds: vector.unixTime, period: 30)
        #expect(String(counter, radix: 16, uppercase: true).leftPadded(to: 16) == vector.valueOfT)
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        #expect(formatter.string(from: Date(timeIntervalSince1970: TimeInterval(vector.unixTime))) == vector.utcTime)
        #expect(
            OneTimeCode.totp(secret: Self.seed(vector.mode), atSeconds: vector.unixTime, parameters: parameters)
                == vector.totp)
    }

    /// RFC 4226 appendix D: HOTP of the 20-byte secret for counts 0 to 9, six digits.
    @Test func rfc4226AppendixD() {
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489",
        ]
        let secret = Self.seed(.sha1)
        #expect(
            (0..<10).map { OneTimeCode.hotp(secret: secret, counter: UInt64($0), digits: 6, algorithm: .sha1) }
                == expected)
    }

    @Test func theSecondsLeftCountDownToTheNextStep() {
        let secret = Self.seed(.sha1)
        let at59 = OneTimeCode.code(secret: secret, at: Date(timeIntervalSince1970: 59), parameters: .init(digits: 8))
        #expect(at59.code == "94287082" && at59.secondsLeft == 1)
        let at60 = OneTimeCode.code(secret: secret, at: Date(timeIntervalSince1970: 60), parameters: .init(digits: 8))
        #expect(at60.secondsLeft == 30 && at60.code != at59.code)
    }

    /// RFC 4648 §10's base32 vectors, both ways, and the forms people paste.
    @Test func base32() {
        let vectors = [
            ("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ]
        for (plain, encoded) in vectors {
            #expect(Array(plain.utf8).base32EncodedString == encoded)
            #expect([UInt8](base32Encoded: encoded) == Array(plain.utf8))
        }
        #expect([UInt8](base32Encoded: "MZXW 6YTB OI======") == Array("foobar".utf8))
        #expect([UInt8](base32Encoded: "mzxw6ytboi") == Array("foobar".utf8))
        for bad in ["M", "MZX", "MZXW6Y", "MZ1W", "MZ=XQ", "MZXR"] {
            #expect([UInt8](base32Encoded: bad) == nil, "\(bad)")
        }
    }

    @Test func aKeyURIIsReadWithItsParametersAndWrittenBack() throws {
        let uri = try OTPAuthURI(
            parsing:
                "otpauth://totp/ACME%20Co:john.doe@email.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ&issuer=ACME%20Co"
                + "&algorithm=SHA256&digits=7&period=60\n")
        #expect(uri.issuer == "ACME Co" && uri.accountName == "john.doe@email.com")
        #expect(uri.parameters == OneTimeCode.Parameters(algorithm: .sha256, digits: 7, period: 60))
        #expect(uri.secret.base32EncodedString == "HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ")
        #expect(!uri.description.contains("HXDM"))
        let again = try OTPAuthURI(parsing: uri.uri)
        #expect(again.secret == uri.secret && again.parameters == uri.parameters && again.issuer == uri.issuer)
        #expect(again.accountName == uri.accountName)

        #expect(throws: OTPAuthURI.Problem(.notTOTP, "")) { try OTPAuthURI(uriOrSecret: "steam://JBSWY3DPEHPK3PXP") }
        #expect(try OTPAuthURI(uriOrSecret: "jbsw y3dp ehpk 3pxp").secret == [UInt8](base32Encoded: "JBSWY3DPEHPK3PXP"))
        #expect(try OTPAuthURI(uriOrSecret: "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&digits=8").parameters.digits == 8)

        let plain = try OTPAuthURI(parsing: "otpauth://totp/alice?secret=JBSWY3DPEHPK3PXP")
        #expect(plain.issuer == nil && plain.accountName == "alice" && plain.parameters == OneTimeCode.Parameters())
    }

    @Test(arguments: [
        ("https://example.com/?secret=JBSWY3DPEHPK3PXP", OTPAuthURI.Problem.Code.notTOTP),
        ("otpauth://hotp/a?secret=JBSWY3DPEHPK3PXP&counter=1", .notTOTP),
        ("otpauth://totp/a", .badSecret), ("otpauth://totp/a?secret=JBSWY3DP!", .badSecret),
        ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&algorithm=MD5", .badParameter),
        ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&digits=9", .badParameter),
        ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&digits=5", .badParameter),
        ("otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&period=0", .badParameter),
    ])
    func badURIsAreRefusedWithoutQuotingTheSecret(text: String, code: OTPAuthURI.Problem.Code) {
        #expect(throws: OTPAuthURI.Problem(code, "")) { try OTPAuthURI(parsing: text) }
        do {
            _ = try OTPAuthURI(parsing: text)
        } catch {
            #expect(!error.message.contains("JBSWY3DP"))
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
