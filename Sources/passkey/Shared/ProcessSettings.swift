import ArgumentParser
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeySettings

/// The settings file, read once per process (`Settings.loadFile`): `Passkey.main()` checks it before a command
/// runs, so a damaged file stops every command before it does anything.
let processSettingsFile = Result { () throws(SettingsError) -> SettingsFile? in
    try Settings.loadFile(environment: ProcessInfo.processInfo.environment)
}

/// The effective settings with `flags` (already checked by the options' `validate()`) over the environment and the
/// file.
func processSettings(flags: [SettingKey: String] = [:]) throws(SettingsError) -> Settings {
    try Settings.resolve(
        flags: flags, environment: ProcessInfo.processInfo.environment, file: try processSettingsFile.get())
}

/// The effective settings once `Passkey.main()` has checked them: a flag's value was checked by `validate()`, and
/// the environment's and the file's before the command ran. Only a `validate()` can see settings that fail (it runs
/// first); it gets the flags over the defaults, and `Passkey.main()` refuses the settings before the command runs.
func checkedSettings(flags: [SettingKey: String] = [:]) -> Settings {
    if let settings = try? processSettings(flags: flags) { return settings }
    let environment = ProcessInfo.processInfo.environment
    return (try? Settings.resolve(flags: flags, environment: [:], file: nil))
        ?? Settings.defaults(store: PasskeyFiles.defaultStore(environment: environment).path)
}

/// An option group whose flags are settings (`HybridOptions`, `ConsentOptions`): its flags are checked as `Settings`
/// checks every source, and its effective settings are these flags over the environment and the settings file.
protocol SettingFlags: ParsableArguments {
    /// The flags given, as the text `Settings` reads.
    var flags: [SettingKey: String] { get }
}

extension SettingFlags {
    /// Checks the flags given, as `Settings` checks every source.
    func validate() throws {
        do {
            _ = try Settings(flags: flags, environment: [:], file: nil, defaultStore: "")
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The effective settings: these flags over the environment and the settings file.
    var settings: Settings { checkedSettings(flags: flags) }
}
