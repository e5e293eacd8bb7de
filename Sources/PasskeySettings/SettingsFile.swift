import TOMLKit

/// The settings file (`settings.toml`), read from its text: a TOML document of top-level keys, each a
/// `SettingKey`. Every value is kept as the text a flag would carry, so that one check (`Settings`) applies to all
/// sources.
///
/// A document TOML cannot read is refused with its line; a key that is not a setting, a table, or a value of the
/// wrong type is refused naming the key. Nothing of a refused file is used.
public struct SettingsFile: Hashable, Sendable {
    /// Where the file is, for messages.
    public var path: String
    /// Each key the file sets, as text.
    public var values: [SettingKey: String]

    public init(path: String, values: [SettingKey: String]) {
        self.path = path
        self.values = values
    }

    /// Reads `text`, the contents of the file at `path`.
    public init(path: String, text: String) throws(SettingsError) {
        self.path = path
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw SettingsError(
                "\(path): line \(error.source.begin.line): \(Self.personTerms(error.description))")
        } catch {
            throw SettingsError("\(path): not a TOML document")
        }
        var values: [SettingKey: String] = [:]
        for name in table.keys.sorted() {
            guard let key = SettingKey(rawValue: name) else {
                let known = SettingKey.allCases.map(\.fileKey).joined(separator: ", ")
                throw SettingsError("\(path): \(name) is not a setting (the settings are \(known))")
            }
            guard let value = table[name] else { continue }
            switch (key, value.type) {
            case (.timeout, .int), (.consentUVWindow, .int), (.consentTimeout, .int):
                values[key] = value.int.map(String.init)
            case (.timeout, .double), (.consentUVWindow, .double), (.consentTimeout, .double):
                values[key] = value.double.map { Settings.secondsText($0) }
            case (.timeout, _), (.consentTimeout, _):
                throw SettingsError("\(path): \(name) must be a number of seconds, as in \(name) = 120")
            case (.consentUVWindow, _):
                throw SettingsError("\(path): \(name) must be a number of minutes, as in \(name) = 5")
            case (_, .string):
                values[key] = value.string
            default:
                throw SettingsError("\(path): \(name) must be a string in quotes, as in \(name) = \"…\"")
            }
        }
        self.values = values
    }

    /// toml++'s description without its `Error while parsing key-value pair: ` prefix and with a lower-case start:
    /// `expected value, saw '\n'`.
    static func personTerms(_ description: String) -> String {
        var text = Substring(description)
        if text.lowercased().hasPrefix("error while parsing"), let colon = text.firstRange(of: ": ") {
            text = text[colon.upperBound...]
        }
        let line = text.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
        return line.isEmpty ? "not TOML" : line.prefix(1).lowercased() + line.dropFirst()
    }
}
