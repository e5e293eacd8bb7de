/// An Apple application identifier, `TEAMID.BUNDLEID`: the ten-character team ID (the App ID prefix) that signs the
/// app, a dot, and the bundle identifier (`ABCDE12345.com.example.app`).
///
/// The team ID is ten upper-case letters or digits, as Apple issues them; the bundle ID is one or more labels of
/// ASCII letters, digits and hyphens separated by dots (Apple's `CFBundleIdentifier` rules). Association files
/// compare app IDs exactly, so no case folding is done here.
public struct AppID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The ten-character team ID.
    public let teamID: String
    /// The bundle identifier after the first dot.
    public let bundleID: String

    /// Reads `TEAMID.BUNDLEID`.
    public init(_ text: String) throws(AssociationFileError) {
        guard let dot = text.firstIndex(of: ".") else {
            throw AssociationFileError(
                .invalidAppID,
                "\"\(text.printable)\" is not an app ID: expected TEAMID.BUNDLEID, such as "
                    + "ABCDE12345.com.example.app")
        }
        let team = text[..<dot]
        let bundle = text[text.index(after: dot)...]
        guard team.utf8.count == 10, team.utf8.allSatisfy({ $0.isASCIIUpperOrDigit }) else {
            throw AssociationFileError(
                .invalidAppID,
                "\"\(text.printable)\" is not an app ID (TEAMID.BUNDLEID): the team ID \"\(String(team).printable)\" must be ten "
                    + "upper-case letters or digits")
        }
        let labels = bundle.split(separator: ".", omittingEmptySubsequences: false)
        guard !bundle.isEmpty,
            labels.allSatisfy({ label in
                !label.isEmpty && label.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") }
            })
        else {
            throw AssociationFileError(
                .invalidAppID,
                "\"\(text.printable)\" is not an app ID (TEAMID.BUNDLEID): the bundle ID \"\(String(bundle).printable)\" must be "
                    + "dot-separated labels of letters, digits and hyphens")
        }
        teamID = String(team)
        bundleID = String(bundle)
    }

    public var description: String { "\(teamID).\(bundleID)" }

    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.description < rhs.description }
}

/// The services an `apple-app-site-association` file can approve an app for, by the key the file and the
/// `com.apple.developer.associated-domains` entitlement use (`webcredentials:example.com`).
public enum AssociatedService: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Shared web credentials, password AutoFill and passkeys for the domain.
    case webcredentials
    /// Universal links.
    case applinks
    /// Handoff between the app and the website.
    case activitycontinuation
    /// App Clips launched from the domain's URLs.
    case appclips

    public var description: String { rawValue }
}

extension UInt8 {
    var isASCIIUpperOrDigit: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }

    var isASCIIHex: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    var isASCIIAlphanumeric: Bool {
        isASCIIUpperOrDigit || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
    }
}

extension StringProtocol {
    /// The text with control characters shown as `\u{…}` and cut at 100 characters, for quoting untrusted input in
    /// messages printed to a terminal.
    var printable: String {
        var result = ""
        var count = 0
        for scalar in unicodeScalars {
            if count == 100 {
                result += "…"
                break
            }
            count += 1
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
