package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
)

// userJSON is a user as `user list --json` prints it: never the password
// hash, only whether there is one.
type userJSON struct {
	Email              string    `json:"email"`
	Name               string    `json:"name"`
	Tier               core.Tier `json:"tier"`
	Role               core.Role `json:"role"`
	SubmissionsPerHour *int      `json:"submissions_per_hour"`
	WebPassword        bool      `json:"web_password"`
	CreatedAt          time.Time `json:"created_at"`
	// State is active, disabled or deleted.
	State      string     `json:"state"`
	DisabledAt *time.Time `json:"disabled_at"`
}

// tokenJSON is a token as `token list --json` prints it: never the token.
type tokenJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func userListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List users in e-mail order: name, tier, role, hourly limit, web password, state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				users := []userJSON{}
				err := core.NewAccounts(e.store).Users(cmd.Context(), func(u core.User) error {
					users = append(users, userJSON{Email: u.Email, Name: u.Name, Tier: u.Tier, Role: u.Role,
						SubmissionsPerHour: u.SubmissionsPerHour, WebPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt.UTC(),
						State: u.State(), DisabledAt: utcPtr(u.DisabledAt)})
					return nil
				})
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), asJSON, users, "EMAIL\tNAME\tTIER\tROLE\tLIMIT/H\tWEB\tCREATED\tSTATE", func(u userJSON) []string {
					limit, web := "default", "no"
					if u.SubmissionsPerHour != nil {
						limit = strconv.Itoa(*u.SubmissionsPerHour)
					}
					if u.WebPassword {
						web = "yes"
					}
					return []string{u.Email, oneLine(u.Name, 40), string(u.Tier), string(u.Role), limit, web, u.CreatedAt.Format(time.RFC3339), u.State}
				})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

// userDisableCmd is `user disable` (disable) or `user enable`.
func userDisableCmd(disable bool) *cobra.Command {
	verb, short := "enable", "Enable a disabled account: the user can log in again (revoked tokens stay revoked)"
	if disable {
		verb, short = "disable", "Disable an account at once: its API tokens are revoked and its web sessions ended; its reports stay"
	}
	c := &cobra.Command{
		Use:   verb + " --email E",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			return withEnv(cmd, func(e *env) error {
				ch, err := core.NewAccounts(e.store).SetDisabled(cmd.Context(), email, disable)
				if err != nil {
					return friendly(err)
				}
				if disable {
					fmt.Fprintf(cmd.OutOrStdout(), "user %s: disabled; %s revoked, %s ended\n", ch.User.Email,
						core.Count(ch.TokensRevoked, "token", "tokens"), core.Count(ch.SessionsEnded, "web session", "web sessions"))
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "user %s: enabled (issue new tokens: the old ones stay revoked)\n", ch.User.Email)
				}
				return nil
			})
		},
	}
	c.Flags().String("email", "", "the user's e-mail address (required)")
	_ = c.MarkFlagRequired("email")
	return c
}

// userAccessCmd is set-tier or set-role: what names the flag, choices its
// values, set the change.
func userAccessCmd(what, choices string, set func(a *core.Accounts, ctx context.Context, email, value string) (core.User, error)) *cobra.Command {
	c := &cobra.Command{
		Use:   "set-" + what + " --email E --" + what + " " + strings.ReplaceAll(choices, ", ", "|"),
		Short: "Change a user's " + what + " (" + choices + "); the daemons apply it within cache.freshness",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			value, _ := cmd.Flags().GetString(what)
			return withEnv(cmd, func(e *env) error {
				u, err := set(core.NewAccounts(e.store), cmd.Context(), email, value)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: tier %s, role %s\n", u.Email, u.Tier, u.Role)
				return nil
			})
		},
	}
	c.Flags().String("email", "", "the user's e-mail address (required)")
	c.Flags().String(what, "", "the new "+what+": "+choices+" (required)")
	_ = c.MarkFlagRequired("email")
	_ = c.MarkFlagRequired(what)
	return c
}

func tokenListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list --email E [--json]",
		Short: "List a user's tokens, newest first: name, created, last used, revoked (never the token itself)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			return withEnv(cmd, func(e *env) error {
				_, toks, err := core.NewAccounts(e.store).TokensOf(cmd.Context(), email)
				if err != nil {
					return friendly(err)
				}
				out := make([]tokenJSON, len(toks))
				for i, t := range toks {
					out[i] = tokenJSON{ID: t.ID, Name: t.Name, Hint: "…" + t.Hint, CreatedAt: t.CreatedAt.UTC(), LastUsedAt: utcPtr(t.LastUsedAt), RevokedAt: utcPtr(t.RevokedAt)}
				}
				return printList(cmd.OutOrStdout(), asJSON, out, "ID\tNAME\tENDS\tCREATED\tLAST USED\tREVOKED", func(t tokenJSON) []string {
					return []string{t.ID, orDash(oneLine(t.Name, 40)), t.Hint, t.CreatedAt.Format(time.RFC3339), stamp(t.LastUsedAt), stamp(t.RevokedAt)}
				})
			})
		},
	}
	c.Flags().String("email", "", "the owner's e-mail address (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	_ = c.MarkFlagRequired("email")
	return c
}

// versionCmd prints the version stamped at build (make build), the commit
// and the Go version.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev, modified := commit, strings.HasSuffix(version, "-dirty")
			if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						rev = s.Value
					case "vcs.modified":
						modified = s.Value == "true"
					}
				}
			}
			if rev == "" {
				rev = "unknown"
			}
			if modified {
				rev += " (modified)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "threatd %s\ncommit %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// printList writes rows as a JSON array (asJSON), or as a table: the
// tab-separated header, then each row's cells.
func printList[T any](w io.Writer, asJSON bool, rows []T, header string, cells func(T) []string) error {
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
