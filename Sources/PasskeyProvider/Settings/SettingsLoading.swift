import Foundation
import PasskeyFilesIO
import PasskeySettings

extension Settings {
    /// The largest settings file read: a few lines are expected.
    public static let fileLimit = 64 * 1024

    /// The settings file `environment` names (`PasskeyFiles.settingsFile(environment:)`), read and checked; nil
    /// when there is none. It is read as the store's side files are (`OwnerOnlyFile`): not through a symbolic link,
    /// and not when another user owns it or may change it, since it chooses the relay and the certificates trusted.
    public static func loadFile(environment: [String: String]) throws(SettingsError) -> SettingsFile? {
        let url = PasskeyFiles.settingsFile(environment: environment)
        let bytes: [UInt8]
        do throws(OwnerOnlyFileError) {
            guard let read = try OwnerOnlyFile.read(url, limit: fileLimit) else { return nil }
            bytes = read
        } catch {
            throw SettingsError("cannot use the settings file \(error.path): \(error.reason)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SettingsError("\(url.path): not UTF-8 text")
        }
        return try SettingsFile(path: url.path, text: text)
    }

    /// The effective settings: `flags`, then `environment`, then `file`, then the defaults, where the default store
    /// is the one the data directory gives (`PasskeyFiles.defaultStore(environment:)`).
    public static func resolve(
        flags: [SettingKey: String] = [:], environment: [String: String], file: SettingsFile?
    ) throws(SettingsError) -> Settings {
        var dataDirectoryOnly = environment
        dataDirectoryOnly[SettingKey.store.environmentVariable] = nil
        return try Settings(
            flags: flags, environment: environment, file: file,
            defaultStore: PasskeyFiles.defaultStore(environment: dataDirectoryOnly).path)
    }
}
