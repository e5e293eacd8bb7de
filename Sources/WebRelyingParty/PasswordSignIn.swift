import Basics
import Crypto
import Foundation
import RelyingParty

/// Passwords as `rp serve` keeps them: only a salted scrypt hash (RFC 7914, N = 2^14, r = 8, p = 1: 16 MiB, the
/// scrypt paper's interactive-login parameters and ``ScryptCost``'s minimum), compared in constant time.
///
/// A check for a user name with no password here derives a key all the same, from a fixed salt, and compares it,
/// so that a wrong password and an unknown user take the same time and get the same answer.
public enum PasswordSignIn {
    public static let rounds = 1 << 14
    public static let blockSize = 8
    public static let parallelism = 1
    /// Bytes of salt and of hash.
    public static let saltByteCount = 16
    public static let hashByteCount = 32
    /// Characters a new password must have at least, and any password at most.
    public static let minimumLength = 8
    public static let maximumLength = 256

    /// The hash to keep for `password` with `salt` (``saltByteCount`` fresh random bytes); nil when scrypt could not
    /// allocate its memory.
    public static func hash(_ password: String, salt: [UInt8]) -> RelyingPartyState.PasswordHash? {
        guard
            let key = ScryptCost.deriveKey(
                normalizedPassphrase: ScryptCost.normalized(password), salt: salt, outputByteCount: hashByteCount,
                rounds: rounds, blockSize: blockSize, parallelism: parallelism)
        else { return nil }
        return RelyingPartyState.PasswordHash(
            rounds: rounds, blockSize: blockSize, parallelism: parallelism, salt: salt,
            hash: key.withUnsafeBytes { Array($0) })
    }

    /// Whether `password` is the one `stored` was made from. With no stored hash (an unknown user, or one without a
    /// password), or one whose parameters ``ScryptCost`` refuses, the same derivation runs on a fixed salt and the
    /// answer is false.
    public static func matches(_ password: String, _ stored: RelyingPartyState.PasswordHash?) -> Bool {
        let usable =
            stored.flatMap { hash in
                ScryptCost.problem(rounds: hash.rounds, blockSize: hash.blockSize, parallelism: hash.parallelism) == nil
                    && !hash.salt.isEmpty && !hash.hash.isEmpty ? hash : nil
            }
        let expected = usable ?? decoy
        guard
            let key = ScryptCost.deriveKey(
                normalizedPassphrase: ScryptCost.normalized(password), salt: expected.salt,
                outputByteCount: expected.hash.count, rounds: expected.rounds, blockSize: expected.blockSize,
                parallelism: expected.parallelism)
        else { return false }
        let equal = key.withUnsafeBytes { constantTimeEqual(Array($0), expected.hash) }
        return equal && usable != nil
    }

    /// What an absent password is compared with: no password derives to 32 zero bytes.
    private static let decoy = RelyingPartyState.PasswordHash(
        rounds: rounds, blockSize: blockSize, parallelism: parallelism,
        salt: Array("passkey rp serve: no such password".utf8), hash: [UInt8](repeating: 0, count: hashByteCount))
}

/// The body of `POST /password/sign-up` and `POST /password/sign-in`: `{"username", "password", "displayName"?}`.
/// The password never appears in an error.
public struct PasswordRequest: Sendable {
    public var userName: String
    public var password: String
    /// Sign-up only: the account's display name; the user name when nil.
    public var displayName: String?

    public init(userName: String, password: String, displayName: String? = nil) {
        self.userName = userName
        self.password = password
        self.displayName = displayName
    }

    /// Reads and checks the body. `newPassword` (sign-up) also asks for at least
    /// ``PasswordSignIn/minimumLength`` characters.
    public init(json: [UInt8], newPassword: Bool) throws(JSONBodyError) {
        let object = try JSONObject(json)
        userName = try CeremonyRequestRules.userName(object.string("username"))
        password = try object.string("password")
        let least = newPassword ? PasswordSignIn.minimumLength : 1
        guard (least...PasswordSignIn.maximumLength).contains(password.count) else {
            throw .outOfBounds("password", reason: "must be \(least) to \(PasswordSignIn.maximumLength) characters")
        }
        displayName = try object.optionalString("displayName").map { (text) throws(JSONBodyError) in
            try RenameRequest.displayName(text)
        }
    }
}

/// The body of `POST /account/rename`: `{"username", "displayName"}`, from a browser signed in as that user.
public struct RenameRequest: Hashable, Sendable {
    public var userName: String
    public var displayName: String

    public init(userName: String, displayName: String) {
        self.userName = userName
        self.displayName = displayName
    }

    public init(json: [UInt8]) throws(JSONBodyError) {
        let object = try JSONObject(json)
        userName = try CeremonyRequestRules.userName(object.string("username"))
        displayName = try Self.displayName(object.string("displayName"))
    }

    /// A display name to keep: ``CeremonyRequestRules/displayName(_:)``'s bounds, and not empty or only white space.
    static func displayName(_ text: String) throws(JSONBodyError) -> String {
        let checked = try CeremonyRequestRules.displayName(text)
        guard !checked.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .outOfBounds("displayName", reason: "must not be empty")
        }
        return checked
    }
}
