//! P5: `-e 'AWS_*'` passes the caller's variables matching a glob, `--env-file FILE` the
//! variables of a docker-style file; `--dry-run` names them and hides their values.

use crate::common::{code, workdir, Who};
use crate::everyday::{each, fresh_dir, run, snug_with};

/// P5: the payload gets `AWS_A`, `AWS_B` (by the pattern), `TOKEN` (the file's value) and
/// `PASSME` (a bare name in the file: the caller's value), not `OTHER`; the dry run lists each
/// name with `(hidden)` and none of the values. Control: without the pattern and the file
/// none of them reaches the payload. Without the fix the pattern was taken as one literal
/// name (nothing passed) and `--env-file` was an unknown option (64).
#[test]
fn p5_env_patterns_and_env_file() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        let file = home.join("job.env");
        std::fs::write(&file, "# the job's\nTOKEN=s3cret value\n\nPASSME\n").expect("write");
        // Values no dry-run line could hold by chance (a cgroup path is hex).
        let env = [("AWS_A", "aws-value-one"), ("AWS_B", "aws-value-two"), ("OTHER", "o"), ("PASSME", "p")];
        let f = file.to_str().unwrap();
        let probe = ["--", "sh", "-c", "echo \"$AWS_A|$AWS_B|$TOKEN|$PASSME|$OTHER\""];
        let mut args = vec!["-e", "AWS_*", "--env-file", f];
        args.extend(probe);
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &args));
        assert_eq!(
            (code(out.status), out.out.as_str()),
            (0, "aws-value-one|aws-value-two|s3cret value|p|\n"),
            "{who:?}: {}",
            out.err
        );

        let plan =
            run(&mut snug_with(who, dir.path(), &home, &env, &["-n", "-e", "AWS_*", "--env-file", f, "--", "true"]));
        assert_eq!(code(plan.status), 0, "{who:?}: {}", plan.err);
        for name in ["AWS_A", "AWS_B", "TOKEN", "PASSME"] {
            assert!(plan.out.contains(&format!("  {name}='(hidden)'\n")), "{who:?}: {name}: {}", plan.out);
        }
        for value in ["aws-value-one", "aws-value-two", "s3cret"] {
            assert!(!plan.out.contains(value), "{who:?}: {value} shown: {}", plan.out);
        }
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &probe));
        assert_eq!(out.out, "||||\n", "{who:?} control");
        let _ = std::fs::remove_dir_all(&home);
    });
}
