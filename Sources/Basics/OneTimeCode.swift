import Crypto
import Foundation

/// Time-based one-time codes: TOTP (RFC 6238) over HOTP (RFC 4226), the six-to-eight-digit codes authenticator apps
/// show, with the parameters the Key Uri Format and CXF `totp` carry. See Docs/Passwords.md, "One-time codes".
public enum OneTimeCode {
    /// The HMAC hash: SHA-1 (the default and what nearly every site uses), SHA-256 or SHA-512.
    public enum Algorithm: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case sha1 = "SHA1"
        case sha256 = "SHA256"
        case sha512 = "SHA512"

        /// `SHA1`, `sha1`, `SHA-1` and the like; nil for any other hash.
        public init?(name: String) {
            let folded = name.uppercased().replacingOccurrences(of: "-", with: "")
            guard let algorithm = Self(rawValue: folded) else { return nil }
            self = algorithm
        }

        public var description: String { rawValue }
    }

    /// How codes are made from a secret: hash, length and time step.
    public struct Parameters: Hashable, Sendable {
        public var algorithm: Algorithm
        /// 6, 7 or 8 (RFC 4226 §5.3 asks for at least 6; 8 is what RFC 6238's vectors use).
        public var digits: Int
        /// The time step in seconds, 1 to 3600 (30 unless a site says otherwise).
        public var period: Int

        public static let digitRange = 6...8
        public static let periodRange = 1...3600

        public init(algorithm: Algorithm = .sha1, digits: Int = 6, period: Int = 30) {
            self.algorithm = algorithm
            self.digits = digits
            self.period = period
        }

        /// Whether the digits and period are in range.
        public var isValid: Bool { Self.digitRange.contains(digits) && Self.periodRange.contains(period) }
    }

    /// The longest secret accepted, in bytes.
    public static let maximumSecretLength = 1024

    /// HOTP (RFC 4226 §5.3): HMAC of the counter as 8 big-endian bytes, dynamic truncation, the low `digits` decimal
    /// digits with leading zeros.
    public static func hotp(secret: [UInt8], counter: UInt64, digits: Int, algorithm: Algorithm) -> String {
        let key = SymmetricKey(data: secret)
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
        let mac: [UInt8] =
            switch algorithm {
            case .sha1: Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
            case .sha256: Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
            case .sha512: Array(HMAC<SHA512>.authenticationCode(for: message, using: key))
            }
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            (UInt64(mac[offset] & 0x7F) << 24) | (UInt64(mac[offset + 1]) << 16) | (UInt64(mac[offset + 2]) << 8)
            | UInt64(mac[offset + 3])
        var modulus: UInt64 = 1
        for _ in 0..<min(max(digits, 1), 10) { modulus *= 10 }
        let text = String(binary % modulus)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// The time step counter at `seconds` since 1970 (RFC 6238 §4.2, T0 = 0); 0 before 1970.
    public static func counter(atSeconds seconds: Int64, period: Int) -> UInt64 {
        seconds <= 0 ? 0 : UInt64(seconds) / UInt64(max(1, period))
    }

    /// TOTP (RFC 6238): the code at `seconds` since 1970.
    public static func totp(secret: [UInt8], atSeconds seconds: Int64, parameters: Parameters) -> String {
        hotp(
            secret: secret, counter: counter(atSeconds: seconds, period: parameters.period),
            digits: parameters.digits, algorithm: parameters.algorithm)
    }

    /// The code at `date` and how many whole seconds it stays valid.
    public static func code(secret: [UInt8], at date: Date, parameters: Parameters) -> (code: String, secondsLeft: Int)
    {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let period = Int64(max(1, parameters.period))
        let left = Int(period - ((seconds % period) + period) % period)
        return (totp(secret: secret, atSeconds: seconds, parameters: parameters), left)
    }
}

/// An `otpauth://totp/` URI as authenticator apps read it from a QR code (Google's Key Uri Format:
/// `otpauth://totp/Issuer:account?secret=BASE32&issuer=Issuer&algorithm=SHA1&digits=6&period=30`).
///
/// `description` never shows the secret.
public struct OTPAuthURI: Sendable, CustomStringConvertible {
    public var issuer: String?
    /// The account name of the label (after `Issuer:`), percent-decoded; may be empty.
    public var accountName: String
    public var secret: [UInt8]
    public var parameters: OneTimeCode.Parameters

    public init(issuer: String?, accountName: String, secret: [UInt8], parameters: OneTimeCode.Parameters) {
        self.issuer = issuer
        self.accountName = accountName
        self.secret = secret
        self.parameters = parameters
    }

    /// Why a URI or a secret was refused; the message never quotes the secret.
    public struct Problem: CodedError {
        public enum Code: Hashable, Sendable {
            /// Not an `otpauth://totp/` URI (an `hotp` one, or not a URI at all).
            case notTOTP
            /// No `secret`, or one that is not base32, empty or too long.
            case badSecret
            /// An algorithm, digits or period outside what this program accepts.
            case badParameter
        }

        public var code: Code
        public var message: String

        public init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        public var description: String { message }
    }

    /// Reads a URI; surrounding spaces and a final newline are ignored.
    public init(parsing raw: String) throws(Problem) {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.lowercased().hasPrefix("otpauth://") else {
            throw Problem(.notTOTP, "it is not an otpauth:// URI")
        }
        guard let components = URLComponents(string: text), components.host?.lowercased() == "totp" else {
            throw Problem(.notTOTP, "it is not an otpauth://totp/ URI (only time-based codes are supported)")
        }
        var label = components.path
        if label.hasPrefix("/") { label.removeFirst() }
        var labelIssuer: String?
        if let colon = label.firstIndex(of: ":") {
            labelIssuer = String(label[..<colon]).trimmingCharacters(in: .whitespaces)
            accountName = String(label[label.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        } else {
            accountName = label
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name.lowercased()] = item.value ?? "" }
        let issuer = query["issuer"].flatMap { $0.isEmpty ? nil : $0 } ?? labelIssuer
        self.issuer = issuer.flatMap { $0.isEmpty ? nil : $0 }
        secret = try Self.secret(query["secret"] ?? "")
        var parameters = OneTimeCode.Parameters()
        if let name = query["algorithm"] {
            guard let algorithm = OneTimeCode.Algorithm(name: name) else {
                throw Problem(.badParameter, "its algorithm must be SHA1, SHA256 or SHA512")
            }
            parameters.algorithm = algorithm
        }
        if let digits = query["digits"] {
            guard let value = Int(digits), OneTimeCode.Parameters.digitRange.contains(value) else {
                throw Problem(.badParameter, "its digits must be 6, 7 or 8")
            }
            parameters.digits = value
        }
        if let period = query["period"] {
            guard let value = Int(period), OneTimeCode.Parameters.periodRange.contains(value) else {
                throw Problem(.badParameter, "its period must be 1 to 3600 seconds")
            }
            parameters.period = value
        }
        self.parameters = parameters
    }

    /// What other managers keep in a login's TOTP field: an `otpauth://totp/` URI, or a bare base32 secret (SHA1,
    /// 6 digits, 30 s). Text with a `:` is read as a URI, so `steam://…` is refused as not an otpauth URI rather than
    /// as a bad secret.
    public init(uriOrSecret text: String) throws(Problem) {
        if text.contains(":") {
            try self.init(parsing: text)
        } else {
            self.init(issuer: nil, accountName: "", secret: try Self.secret(text), parameters: .init())
        }
    }

    /// A bare base32 secret, as sites show it under "can't scan the code?"; spaces allowed.
    public static func secret(_ text: String) throws(Problem) -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw Problem(.badSecret, "it has no secret") }
        guard let bytes = [UInt8](base32Encoded: trimmed) else {
            throw Problem(.badSecret, "its secret is not base32 (letters A-Z and digits 2-7)")
        }
        guard (1...OneTimeCode.maximumSecretLength).contains(bytes.count) else {
            throw Problem(.badSecret, "its secret must be 1 to \(OneTimeCode.maximumSecretLength) bytes")
        }
        return bytes
    }

    /// The URI, for another authenticator (it holds the secret).
    public var uri: String {
        var components = URLComponents()
        components.scheme = "otpauth"
        components.host = "totp"
        components.path = "/" + (issuer.map { "\($0):" } ?? "") + accountName
        components.queryItems =
            [URLQueryItem(name: "secret", value: secret.base32EncodedString)]
            + (issuer.map { [URLQueryItem(name: "issuer", value: $0)] } ?? [])
            + [
                URLQueryItem(name: "algorithm", value: parameters.algorithm.rawValue),
                URLQueryItem(name: "digits", value: String(parameters.digits)),
                URLQueryItem(name: "period", value: String(parameters.period)),
            ]
        return components.string ?? ""
    }

    public var description: String {
        "otpauth://totp/\(issuer.map { "\($0):" } ?? "")\(accountName) (secret hidden)"
    }
}
