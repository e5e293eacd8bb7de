import Basics

/// Why an association file (`apple-app-site-association`, `assetlinks.json`), an app ID or a Smart App Banner tag
/// could not be read. The message names the JSON path (`applinks.details[2].components[0]["?"]`) and what was
/// expected there.
public struct AssociationFileError: CodedError {
    /// The kind of failure, stable for callers and tests to match on.
    public enum Code: Hashable, Sendable {
        /// The bytes are not JSON (RFC 8259), or nest too deeply.
        case malformedJSON
        /// The input is larger than the limit (`AppSiteAssociation.maximumBytes`).
        case tooLarge
        /// A member has the wrong JSON type, or a value outside what the format allows.
        case wrongType
        /// A member the format requires is absent.
        case missingMember
        /// An app ID is not `TEAMID.BUNDLEID`.
        case invalidAppID
        /// A certificate fingerprint is not 32 bytes written as colon-separated hexadecimal pairs.
        case invalidFingerprint
        /// The page has no `<meta name="apple-itunes-app">` tag.
        case noBanner
        /// The banner's `content` has no `app-id`, or one that is not all digits.
        case invalidBanner
    }

    public var code: Code
    /// Where in the document: a JSON path such as `applinks.details[0].appIDs[1]`, or empty for the whole input.
    public var path: String
    /// One sentence for people, without a trailing period; it names `path`.
    public var message: String

    public init(_ code: Code, path: String = "", _ message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    public var description: String { message }
}
