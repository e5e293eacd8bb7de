import Basics

/// Why an export could not be written or an import file could not be read. Messages name the field and the
/// problem, never key material or passphrases.
public struct ExchangeError: CodedError {
    /// The kind of failure, stable for callers and tests to match on.
    public enum Code: Hashable, Sendable {
        /// The bytes are not JSON, or not the JSON this format needs.
        case malformedJSON
        /// The bytes are not the CSV this format needs (KeePassXC's export).
        case malformedCSV
        /// A field the format requires is absent (a CXF credential without `type`, a passkey without `key`).
        case missingField
        /// A field has a value this format does not allow (wrong type, bad base64url, out of range).
        case invalidValue
        /// The file is of a version this program does not read.
        case unsupportedVersion
        /// The HPKE suite, KDF or cipher named in the file is not the one this program uses.
        case unsupportedAlgorithm
        /// The key is not a P-256 key, or not one this format allows.
        case invalidKey
        /// The payload does not open with this key: the wrong importer key, or the file was changed.
        case wrongKeyOrTampered
        /// The archive does not open with this passphrase: the wrong passphrase, or the file was changed.
        case wrongPassphraseOrTampered
        /// The archive asks for key derivation parameters outside the accepted bounds.
        case kdfParametersRefused
        /// The input is larger than this format allows.
        case tooLarge
        /// The file is none of the formats `passkey import` reads.
        case unknownFormat
        /// The file is an encrypted export of another manager, which this program cannot open.
        case encryptedExport
        /// One or more entries failed their checks; each is listed, nothing is imported.
        case invalidEntries
    }

    public var code: Code
    /// One sentence for people, without a trailing period.
    public var message: String
    /// For `.invalidEntries`: each bad entry with its reason.
    public var problems: [EntryProblem]

    public init(_ code: Code, _ message: String, problems: [EntryProblem] = []) {
        self.code = code
        self.message = message
        self.problems = problems
    }

    public var description: String { message }
}

/// One entry of an import file that cannot be imported, by its position in the file.
public struct EntryProblem: Hashable, Sendable, CustomStringConvertible {
    /// Where the entry is, in the file's own terms: `items[3].login.fido2Credentials[0]`,
    /// `accounts[0].items[1].credentials[0]`, `[2]`.
    public var location: String
    /// What is wrong with it; never key material.
    public var reason: String

    public init(location: String, reason: String) {
        self.location = location
        self.reason = reason
    }

    public var description: String { "\(location): \(reason)" }
}
